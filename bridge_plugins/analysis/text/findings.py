"""Findings and the analyzers' figures as rich renderables for the terminal (summary, diagnose)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from bridge_plugins.analysis.findings.model import HIGH, MEDIUM, Finding
from bridge_plugins.analysis.text.summary import ms, short

_STYLE = {HIGH: "bold red", MEDIUM: "yellow"}


def findings_table(findings: list[Finding]) -> Table | Text:
    if not findings:
        return Text("Findings: nothing stands out (see docs/diagnose.md for what is checked).", style="green")
    t = Table(title="Findings, largest time at stake first", title_justify="left")
    for col, justify in (("#", "right"), ("kind", "left"), ("severity", "left"), ("ms/step", "right")):
        t.add_column(col, justify=justify)
    t.add_column("share", justify="right")
    t.add_column("what", overflow="fold")
    for i, f in enumerate(findings, 1):
        share = "-" if f.share_of_step is None else f"{100 * f.share_of_step:.1f} %"
        t.add_row(
            str(i), f.kind, Text(f.severity, style=_STYLE.get(f.severity, "")), ms(f.time_us_per_step), share, f.title
        )
    return t


def advice(findings: list[Finding], limit: int = 3) -> list[Text]:
    """What to try for each kind found, once per kind, in ranking order."""
    out, seen = [], set()
    for f in findings:
        if f.kind in seen:
            continue
        seen.add(f.kind)
        out.append(Text(f"{f.kind}: try", style="bold"))
        out += [Text(f"  - {a}") for a in f.advice[:limit]]
    return out


def analyses_table(trace: dict) -> Table | None:
    """One row per analyzer with its headline figures for one trace."""
    a, label = trace["analyses"], f"rank {trace['rank']}"
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
                f"stream {s.stream}: {ms(s.idle_us)} ms idle, host wait {s.host_wait_pct or 0:.0f} %, "
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
                    f"{k.kind}: {k.events} ({k.pageable} pageable), median {k.bandwidth_gbps.median or 0:.2f} GB/s"
                    for k in a.bandwidth.kinds
                )
                or "-",
                a.bandwidth.note,
            )
        )
    if a.attribution is not None and a.attribution.top_level_ops:
        top = a.attribution.top_level_ops[:3]
        rows.append(
            ("GPU time by CPU op", "; ".join(f"{short(o.name, 50)} {ms(o.gpu_us)} ms" for o in top), a.attribution.note)
        )
    rows.append(
        (
            "synchronizations",
            f"{a.syncs.count} ({', '.join(f'{k} {v}' for k, v in a.syncs.by_name.items()) or 'none'})",
            a.syncs.note,
        )
    )
    t = Table(title=f"Why, {label}", title_justify="left")
    t.add_column("question")
    t.add_column("answer", overflow="fold")
    for question, answer, note in rows:
        t.add_row(question, answer + (f" ({note})" if note else ""))
    if a.note:
        t.add_row("GPU", a.note)
    return t
