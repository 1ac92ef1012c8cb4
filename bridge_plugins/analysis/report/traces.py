"""Report sections from the trace summary (``analysis.pipeline.summarize``): step times, GPU time
breakdown, top operators and kernels, and the cross-rank straggler view."""

from __future__ import annotations

from html import escape

from bridge_plugins.analysis.analyzers.gpu_breakdown import parts_us
from bridge_plugins.analysis.report.parts import COLOURS, cell, fmt_ms, fmt_pct, name_cell, rank_label, section, table
from bridge_plugins.analysis.report.svg import deviation_bars, range_hbars, stacked_hbars
from bridge_plugins.analysis.schema import CrossRankGroup, CrossRankRow, Summary, TraceSummary

GPU_PARTS = [
    ("computation", "computation", COLOURS["computation"]),
    ("communication", "communication (not under compute)", COLOURS["communication"]),
    ("memory", "memcpy/memset (not under compute)", COLOURS["memory"]),
    ("idle", "idle", COLOURS["idle"]),
]


def steps_section(s: Summary) -> str:
    traces = s.traces
    timed = [t for t in traces if t.steps.median_us is not None]
    stragglers = {r for g in s.cross_rank for r in g.stragglers}
    rows = [
        {
            "label": rank_label(t, traces),
            "min": t.steps.min_us,
            "median": t.steps.median_us,
            "max": t.steps.max_us,
            "flag": t.rank in stragglers,
            "data": {
                "rank": t.rank,
                "file": t.file,
                "count": t.steps.count,
                "min-us": t.steps.min_us,
                "median-us": t.steps.median_us,
                "max-us": t.steps.max_us,
            },
        }
        for t in timed
    ]
    untimed = "".join(
        f"<li>{escape(rank_label(t, traces))}: {escape(t.steps.note or 'no step times')}</li>"
        for t in traces
        if t.steps.median_us is None
    )
    body = range_hbars("chart-steps", "Step time per rank: median bar, min–max whisker", rows, fmt_ms) if rows else ""
    body += f'<ul class="note">{untimed}</ul>' if untimed else ""
    captured = sorted({n for t in traces for n in t.steps.captured})
    intro = (
        f"From the ProfilerStep spans on each rank's CPU thread. Steps captured: "
        f"{escape(', '.join(map(str, captured)) or 'none')}. A red bar is a straggler (see below)."
    )
    return section("steps", "Step times", body, intro)


def gpu_section(s: Summary) -> str:
    traces = [t for t in s.traces if t.gpu]
    if not traces:
        return section(
            "gpu", "GPU time breakdown", '<p class="note">No GPU events in these traces (CPU-only runs).</p>'
        )
    rows, table_rows = [], []
    for t in traces:
        g = t.gpu
        if g is None:  # not kept above; for the type checker
            continue
        values = parts_us(g)
        rows.append(
            {
                "label": rank_label(t, s.traces),
                "values": values,
                "total": g.span_us,
                "data": {"rank": t.rank, "file": t.file, "span-us": g.span_us},
            }
        )
        table_rows.append(
            f"<td>{escape(rank_label(t, s.traces))}</td>"
            + cell(g.span_us, fmt_ms)
            + "".join(
                cell(values[k], fmt_ms) + f'<td class="num pct">{values[k] / g.span_us:.1%}</td>'
                for k, _, _ in GPU_PARTS
            )
            + cell(g.communication_total_us, fmt_ms)
        )
    headers = ["rank", "GPU span"] + [h for k, _, _ in GPU_PARTS for h in (k, "%")] + ["all communication"]
    intro = (
        "Over each rank's GPU span (first kernel start to last kernel end, all streams), with "
        "HolisticTraceAnalysis's definitions: computation = union of compute kernels; communication and "
        "memcpy/memset count only where no compute kernel runs; idle = no kernel at all. "
        "'all communication' includes the part hidden under compute."
    )
    chart = stacked_hbars("chart-gpu", "GPU time per rank", rows, GPU_PARTS, fmt_ms)
    return section("gpu", "GPU time breakdown", chart + table("table-gpu", headers, table_rows, "figures"), intro)


def _ops_table(t: TraceSummary, i: int) -> str:
    rows = [
        name_cell(r.name) + cell(r.self_us, fmt_ms) + cell(r.total_us, fmt_ms) + f'<td class="num">{r.calls}</td>'
        for r in t.top_cpu_ops
    ]
    return table(f"table-ops-{i}", ["CPU operator", "self", "total", "calls"], rows, "ops")


def _kernels_table(t: TraceSummary, i: int) -> str:
    top = max((r.total_us for r in t.top_gpu_kernels), default=0) or 1
    rows = [
        name_cell(r.name) + f'<td><span class="tag" style="background:{COLOURS.get(r.type, "#999")}">'
        f"{escape(r.type)}</span></td>"
        + cell(r.total_us, fmt_ms)
        + f'<td class="num">{r.calls}</td><td class="meter"><i style="width:{r.total_us / top:.1%};'
        f'background:{COLOURS.get(r.type, "#999")}"></i></td>'
        for r in t.top_gpu_kernels
    ]
    return table(f"table-kernels-{i}", ["GPU kernel", "type", "time", "calls", ""], rows, "kernels")


def tops_section(s: Summary) -> str:
    blocks = []
    for i, t in enumerate(s.traces):
        kernels = _kernels_table(t, i) if t.top_gpu_kernels else ""
        blocks.append(
            f'<details class="rank" data-rank="{t.rank}" data-file="{escape(t.file, quote=True)}" '
            f"{'open' if i == 0 else ''}><summary>{escape(rank_label(t, s.traces))}"
            f' <span class="file">{escape(t.file)}</span></summary><div>'
            f"<div>{_ops_table(t, i)}</div><div>{kernels}</div></div></details>"
        )
    intro = "CPU operators by self time (time not spent in nested operators); GPU kernels by total time. Click a rank to open it."
    return section("tops", "Top operators and kernels", "".join(blocks), intro)


def _straggler_words(group: CrossRankGroup) -> str:
    by_rank = {r.rank: r for r in group.ranks}
    if not group.stragglers:
        return "No straggler: every rank's step and compute time is close to the median."
    parts = []
    for rank in group.stragglers:
        r = by_rank[rank]
        why = ", ".join(f"{k} {fmt_pct(getattr(r, f'{k}_vs_median'))}" for k in r.straggler_reasons)
        parts.append(f"<b>rank {rank}</b> ({escape(why)} vs the median)")
    waiting = ", ".join(f"rank {w}" for w in group.waiting) or "none"
    return f"Straggler: {', '.join(parts)}. Waiting on it (most time in communication): {escape(waiting)}."


def rank_figure_cells(r: CrossRankRow) -> str:
    """A cross-rank row's rank and its six figures (step, computation, communication: time and vs the median)."""
    return (
        f"<td>rank {r.rank}</td>"
        + cell(r.step_median_us, fmt_ms)
        + cell(r.step_vs_median, fmt_pct)
        + cell(r.computation_us, fmt_ms)
        + cell(r.computation_vs_median, fmt_pct)
        + cell(r.communication_total_us, fmt_ms)
        + cell(r.communication_vs_median, fmt_pct)
    )


def stragglers_section(s: Summary) -> str:
    groups = [g for g in s.cross_rank if len(g.ranks) > 1]
    if not groups:
        return section(
            "stragglers", "Stragglers", '<p class="note">One rank only: nothing to compare across ranks.</p>'
        )
    series = [
        ("step", "step time", "#4c78a8"),
        ("computation", "compute time", "#72b7b2"),
        ("communication", "communication", "#f58518"),
    ]
    blocks: list[str] = []
    for gi, g in enumerate(groups):
        rows = [
            {
                "label": f"rank {r.rank}" + (" (straggler)" if r.straggler else " (waiting)" if r.waiting else ""),
                "flag": r.straggler,
                "values": {
                    "step": r.step_vs_median,
                    "computation": r.computation_vs_median,
                    "communication": r.communication_vs_median,
                },
                "data": {
                    "rank": r.rank,
                    "straggler": str(r.straggler).lower(),
                    "waiting": str(r.waiting).lower(),
                },
            }
            for r in g.ranks
        ]
        steps = ", ".join(map(str, g.steps))
        blocks.append(
            f'<p class="verdict">{_straggler_words(g)}</p>'
            + deviation_bars(
                f"chart-stragglers-{gi}", f"Each rank against the median of all ranks (steps {steps})", rows, series
            )
        )
        table_rows = [
            rank_figure_cells(r) + f"<td>{'straggler' if r.straggler else 'waiting' if r.waiting else ''}</td>"
            for r in g.ranks
        ]
        blocks.append(
            table(
                f"table-stragglers-{gi}",
                ["rank", "median step", "vs median", "compute", "vs median", "communication", "vs median", ""],
                table_rows,
                "figures",
            )
        )
    intro = "A straggler's step or compute time stands out from the median across ranks; the ranks that wait on it spend the most time in communication."
    return section("stragglers", "Stragglers", "".join(blocks), intro)
