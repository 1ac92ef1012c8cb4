"""One line per analyzer for one trace: what the terminal's "Why" table and the report's show."""

from __future__ import annotations

from bridge_plugins.analysis.analyzers.all import TraceAnalyses
from bridge_plugins.analysis.analyzers.attribution import MODULE_PREFIX


def _ms(us: float | None) -> str:
    return "-" if us is None else f"{us / 1000:,.2f}"


def _short(name: str, width: int) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def headlines(a: TraceAnalyses) -> list[tuple[str, str]]:
    """(question, answer) per analyzer, each answer one line with its note when there is one."""
    rows = []
    if a.overlap is not None:
        o = a.overlap
        rows.append(
            (
                "overlap",
                "-" if o.overlap_pct is None else f"{o.overlap_pct:.1f} % of communication under computation",
                o.note,
            )
        )
    if a.idle is not None and a.idle.streams:
        s = max(a.idle.streams, key=lambda x: (x.computation_us, x.busy_us))
        rows.append(
            (
                "idle (compute stream)",
                f"stream {s.stream}: {_ms(s.idle_us)} ms idle, host wait {s.host_wait_pct or 0:.0f} %, "
                f"kernel wait {s.kernel_wait_pct or 0:.0f} %, other {s.other_pct or 0:.0f} %",
                a.idle.note,
            )
        )
    if a.launches is not None and a.launches.launches:
        ls = a.launches
        rows.append(
            (
                "kernel launches",
                f"{ls.launches} launches; median CPU {ls.cpu_duration_us.median:.1f} us, GPU {ls.gpu_duration_us.median:.1f} us, "
                f"delay {ls.launch_delay_us.median:.1f} us (p95 {ls.launch_delay_us.p95:.1f}); {ls.shorter_on_gpu} shorter than launch",
                ls.note,
            )
        )
    if a.queue is not None and a.queue.streams:
        q = max(a.queue.streams, key=lambda x: x.queue_length.count)
        rows.append(
            (
                "queue length",
                f"stream {q.stream}: median {q.queue_length.median:.0f}, max {q.queue_length.max:.0f}",
                a.queue.note,
            )
        )
    if a.bandwidth is not None:
        rows.append(
            (
                "memcpy/memset",
                "; ".join(
                    f"{k.kind}: {k.events} ({k.pageable} pageable)"
                    + (f", median {k.bandwidth_gbps.median or 0:.2f} GB/s" if k.bandwidth_gbps.count else "")
                    for k in a.bandwidth.kinds
                )
                or "-",
                a.bandwidth.note,
            )
        )
    if a.attribution is not None and a.attribution.top_level_ops:
        top = a.attribution.top_level_ops[:3]
        rows.append(
            (
                "GPU time by CPU op",
                "; ".join(f"{_short(o.name, 50)} {_ms(o.gpu_us)} ms" for o in top),
                a.attribution.note,
            )
        )
    if a.attribution is not None and a.attribution.modules:
        top_modules = a.attribution.modules[:3]
        rows.append(
            (
                "GPU time by module",
                "; ".join(f"{_short(m.name.removeprefix(MODULE_PREFIX), 50)} {_ms(m.gpu_us)} ms" for m in top_modules),
                None,
            )
        )
    rows.append(
        (
            "synchronizations",
            f"{a.syncs.count} ({', '.join(f'{k} {v}' for k, v in a.syncs.by_name.items()) or 'none'})",
            a.syncs.note,
        )
    )
    out = [(q, answer + (f" ({note})" if note else "")) for q, answer, note in rows]
    return out + ([("GPU", a.note)] if a.note else [])
