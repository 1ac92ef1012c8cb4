"""The report's "Where each step goes" section: a stacked bar per step, per rank.

The parts are ``per_step[i].breakdown`` (analyzers/step_breakdown.py: torch-tb-profiler's overview
split), drawn with the report's one stacked-bar chart, so every segment carries its exact figure.
A CPU-only trace has no GPU parts, and its chart shows none.
"""

from __future__ import annotations

from bridge_plugins.analysis.analyzers.step_breakdown import GPU_PARTS, parts_of
from bridge_plugins.analysis.report.parts import fmt_ms, rank_label, section
from bridge_plugins.analysis.report.svg import stacked_hbars
from bridge_plugins.analysis.schema import Summary

MAX_RANKS = 16  # charts drawn; the rest are in summary --json
PARTS = [  # (key, label, colour), in the plugin's priority order
    ("kernel_us", "kernel", "#4c78a8"),
    ("memcpy_us", "memcpy", "#54a24b"),
    ("memset_us", "memset", "#88d27a"),
    ("communication_us", "communication", "#f58518"),
    ("runtime_us", "runtime", "#e45756"),
    ("dataloader_us", "DataLoader", "#b279a2"),
    ("cpu_exec_us", "CPU exec", "#72b7b2"),
    ("other_us", "other", "#bab0ac"),
]


def step_breakdown_section(s: Summary) -> str:
    traces = [t for t in s.traces if any(p.breakdown for p in t.per_step)]
    charts = []
    for t in traces[:MAX_RANKS]:
        gpu = t.gpu is not None
        parts = [p for p in PARTS if gpu or p[0].removesuffix("_us") not in GPU_PARTS]
        rows = [
            {
                "label": f"step {p.step}",
                "values": parts_of(p.breakdown),
                "total": p.breakdown.step_us,
                "data": {"rank": t.rank, "step": p.step, "step-us": p.breakdown.step_us},
            }
            for p in t.per_step
            if p.breakdown
        ]
        title = f"Where each step goes, {rank_label(t, s.traces)}"
        charts.append(stacked_hbars(f"chart-step-breakdown-{t.rank}", title, rows, parts, fmt_ms))
    if not charts:
        return section("step-breakdown", "Where each step goes", '<p class="note">No ProfilerStep spans.</p>')
    more = len(traces) - MAX_RANKS
    note = f'<p class="note">{more} more ranks: summary --json has them.</p>' if more > 0 else ""
    intro = (
        "Each instant of a step goes to the first of these that is busy then (torch-tb-profiler's overview "
        "split): kernel, memcpy, memset, communication, runtime, DataLoader, CPU exec; the "
        "rest is other. A step runs from its start to the end of the GPU work it launched."
    )
    return section("step-breakdown", "Where each step goes", "".join(charts) + note, intro)
