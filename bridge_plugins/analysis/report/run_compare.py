"""The report's comparison section (``report --baseline OTHER``), from ``analysis.run_compare``'s RunComparison
and, where both runs have snapshots, ``memory.snapshot_diff.compare_snapshot_figures``."""

from __future__ import annotations

from html import escape

from bridge_plugins.analysis.memory.results import SnapshotComparison
from bridge_plugins.analysis.report.memory import memory_compare_block
from bridge_plugins.analysis.report.parts import card, cell, fmt_ms, fmt_ms_signed, name_cell, section, table
from bridge_plugins.analysis.report.svg import stacked_hbars
from bridge_plugins.analysis.report.traces import GPU_PARTS
from bridge_plugins.analysis.run_compare import DeltaRow, RunComparison


def _changes(table_id: str, title: str, rows: list[DeltaRow], unit: str) -> str:
    body = [
        name_cell(r.name)
        + cell(r.base_us, fmt_ms)
        + cell(r.new_us, fmt_ms)
        + cell(r.delta_us, fmt_ms_signed)
        + f'<td class="num">{r.base_calls:g} → {r.new_calls:g}</td>'
        for r in rows
    ]
    return f"<h4>{escape(title)}</h4>" + table(
        table_id, ["name", "baseline", "this run", "change", f"calls {unit}"], body, "figures"
    )


def compare_section(c: RunComparison, memory_cmp: SnapshotComparison | None) -> str:
    base, new = c.base, c.new
    pct = f"{c.step_delta_pct:+.1f} %" if c.step_delta_pct is not None else ""
    delta = c.step_delta_us
    cards = (
        card(
            "median step, baseline",
            fmt_ms(base.step_median_us),
            ", ".join(base.inputs),
            base.step_median_us,
            "base-step",
        )
        + card(
            "median step, this run",
            fmt_ms(new.step_median_us),
            ", ".join(new.inputs),
            new.step_median_us,
            "new-step",
        )
        + card("change", fmt_ms_signed(delta), pct, delta, "delta " + ("worse" if (delta or 0) > 0 else "better"))
    )
    body = f'<div class="cards">{cards}</div>'
    if base.gpu and new.gpu:
        rows = [
            {
                "label": label,
                "values": {k: getattr(gpu, f"{k}_us") for k, _, _ in GPU_PARTS},
                "total": gpu.span_us,
                "data": {"run": key, "span-us": gpu.span_us},
            }
            for key, label, gpu in (("base", "baseline", base.gpu), ("new", "this run", new.gpu))
        ]
        body += stacked_hbars("chart-compare-gpu", "GPU time breakdown, mean per trace", rows, GPU_PARTS, fmt_ms)
    unit = c.normalized
    body += _changes("table-ops-regressions", "CPU operators: regressions", c.ops_regressions, unit)
    body += _changes("table-ops-improvements", "CPU operators: improvements", c.ops_improvements, unit)
    body += _changes("table-kernels-regressions", "GPU kernels: regressions", c.kernels_regressions, unit)
    body += _changes("table-kernels-improvements", "GPU kernels: improvements", c.kernels_improvements, unit)
    if memory_cmp:
        body += memory_compare_block(memory_cmp)
    intro = (
        f"Baseline: {escape(', '.join(base.inputs))}. Operator and kernel times are {escape(unit)} "
        "(each run's total divided by the steps its traces captured), so runs of different lengths compare."
    )
    return section("compare", "Compared with the baseline", body, intro)
