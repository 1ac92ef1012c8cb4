"""The report's many-ranks view (``ranks_view.MANY_RANKS`` traces and more): heatmaps, not a row per rank.

Step time and GPU idle share as rank x step heatmaps (inline SVG, one ``<rect>`` per cell, its
exact figure in ``data-v``), the spread across ranks, the stragglers table, and the top operators
of the worst stragglers only. A page of 1,000 ranks stays a few hundred kB (a row per rank was
20 MB) and opens in any browser.
"""

from __future__ import annotations

import dataclasses
from html import escape

from bridge_plugins.analysis import ranks_view
from bridge_plugins.analysis.report.parts import cell, fmt_ms, section, table
from bridge_plugins.analysis.report.svg import FONT, WIDTH, Fmt
from bridge_plugins.analysis.report.traces import rank_figure_cells, tops_section
from bridge_plugins.analysis.schema import Summary

PALETTE = ["#ffffcc", "#ffeda0", "#fed976", "#feb24c", "#fd8d3c", "#fc4e2a", "#e31a1c", "#bd0026", "#800026"]
"""Low to high (ColorBrewer YlOrRd): the darker, the slower or the idler."""
MISSING = "#e8e8e8"
STYLE = "".join(f".h{i}{{fill:{c}}}" for i, c in enumerate(PALETTE)) + f".hn{{fill:{MISSING}}}"
LEFT, RIGHT, TOP, BOTTOM = 110, 20, 8, 46
STRAGGLER_ROWS = 20


def _shade(v: float | None, lo: float, hi: float) -> str:
    if v is None:
        return "hn"
    k = 0 if hi <= lo else int((v - lo) / (hi - lo) * len(PALETTE))
    return f"h{min(max(k, 0), len(PALETTE) - 1)}"


def _range_label(a: int, b: int, what: str) -> str:
    return f"{what} {a}" if a == b else f"{what}s {a}-{b}"


def heatmap(chart_id: str, title: str, grid: ranks_view.Grid, lo: float, hi: float, fmt: Fmt, note: str = "") -> str:
    """Rows are ranks (top: lowest), columns steps; colour from ``lo`` (lightest) to ``hi`` (darkest)."""
    n_rows, n_cols = len(grid.rows), len(grid.columns)
    height = max(160, min(800, 3 * n_rows)) + TOP + BOTTOM
    plot_w, plot_h = WIDTH - LEFT - RIGHT, height - TOP - BOTTOM
    cells = "".join(
        f'<rect x="{c}" y="{r}" width="1" height="1" class="{_shade(v, lo, hi)}"'
        + (f' data-v="{v:.6g}"' if v is not None else "")
        + "/>"
        for r, row in enumerate(grid.cells)
        for c, v in enumerate(row)
    )
    ticks = []
    for r in sorted({round(i * (n_rows - 1) / 9) for i in range(10)} if n_rows > 1 else {0}):
        y = TOP + (r + 0.5) * plot_h / n_rows
        ticks.append(
            f'<text x="{LEFT - 6}" y="{y:.1f}" text-anchor="end" dominant-baseline="middle" font-size="11">'
            f"{escape(_range_label(*grid.rows[r], 'rank'))}</text>"
        )
    every = max(1, n_cols // 10)
    for c in range(0, n_cols, every):
        x = LEFT + (c + 0.5) * plot_w / n_cols
        a, b = grid.columns[c]
        ticks.append(
            f'<text x="{x:.1f}" y="{TOP + plot_h + 14}" text-anchor="middle" font-size="11">'
            f"{a if a == b else f'{a}-{b}'}</text>"
        )
    ticks.append(f'<text x="{LEFT + plot_w / 2}" y="{height - 8}" text-anchor="middle" font-size="12">step</text>')
    body = (
        f"<style>{STYLE}</style>"
        f'<svg x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" viewBox="0 0 {n_cols} {n_rows}" '
        f'preserveAspectRatio="none" shape-rendering="crispEdges" class="cells">{cells}</svg>' + "".join(ticks)
    )
    scale = "".join(f'<i class="swatch" style="background:{c}"></i>' for c in PALETTE)
    legend = (
        f'<div class="legend heat"><span>{escape(fmt(lo))}</span><span class="scale">{scale}</span>'
        f'<span>{escape(fmt(hi))}</span><span><i style="background:{MISSING}"></i>no such step</span></div>'
    )
    return (
        f'<figure class="chart heatmap" id="{chart_id}" data-rows="{n_rows}" data-columns="{n_cols}" '
        f'data-lo="{lo:.6g}" data-hi="{hi:.6g}"><figcaption>{escape(title)}</figcaption>{legend}'
        f'<svg viewBox="0 0 {WIDTH} {height}" width="100%" role="img" aria-label="{escape(title, quote=True)}" '
        f"{FONT}>{body}</svg>" + (f'<p class="note">{note}</p>' if note else "") + "</figure>"
    )


def _fold_note(grid: ranks_view.Grid) -> str:
    parts = []
    if any(a != b for a, b in grid.rows):
        parts.append("each row holds several ranks")
    if any(a != b for a, b in grid.columns):
        parts.append("each column several steps")
    return ("Folded: " + " and ".join(parts) + "; a cell shows the highest value among them.") if parts else ""


def _fraction(v: float) -> str:
    return f"{v:.0%}"


def steps_section(s: Summary) -> str:
    g = ranks_view.grid(s.traces, "time_us")
    values = g.values()
    if not values:
        return section("steps", "Step times", '<p class="note">No ProfilerStep spans in these traces.</p>')
    chart = heatmap("chart-step-heatmap", "Step time, rank x step", g, min(values), max(values), fmt_ms, _fold_note(g))
    return section("steps", "Step times", chart + _spread_table(s), "Each cell is one rank's step; darker is slower.")


def gpu_section(s: Summary) -> str:
    g = ranks_view.grid(s.traces, "gpu_idle_share")
    if not g.values():
        return section("gpu", "GPU idle", '<p class="note">No GPU events in these traces (CPU-only runs).</p>')
    chart = heatmap("chart-idle-heatmap", "GPU idle share, rank x step", g, 0.0, 1.0, _fraction, _fold_note(g))
    intro = (
        "The share of each step's GPU window (its first kernel's start to its last one's end) in which "
        "none of the work it launched runs on any stream; darker is idler."
    )
    return section("gpu", "GPU idle", chart, intro)


def _spread_table(s: Summary) -> str:
    rows = []
    for sp in ranks_view.spreads(s):
        fmt = fmt_ms if sp.label.endswith("(us)") else _fraction
        rows.append(
            f"<td>{escape(sp.label.replace(' (us)', ''))}</td>"
            + "".join(cell(v, fmt) for v in (sp.min, sp.p10, sp.median, sp.p90, sp.max))
            + f'<td class="num">{sp.max_rank}</td>'
        )
    return table("table-spread", ["across ranks", "min", "p10", "median", "p90", "max", "at rank"], rows, "figures")


def stragglers_section(s: Summary) -> str:
    rows = ranks_view.stragglers(s)
    table_rows = [
        rank_figure_cells(r) + f"<td>{escape(', '.join(r.straggler_reasons))}</td>" for r in rows[:STRAGGLER_ROWS]
    ]
    more = len(rows) - STRAGGLER_ROWS
    note = f'<p class="note">and {more} more stragglers: summary --json lists every rank.</p>' if more > 0 else ""
    verdict = (
        f'<p class="verdict">{len(rows)} of {len(s.traces)} ranks straggle; '
        f"{ranks_view.waiting_count(s)} wait on them in communication.</p>"
        if rows
        else '<p class="verdict">No straggler: every rank is within 10 % of the median step and compute time.</p>'
    )
    body = (
        verdict
        + table(
            "table-stragglers",
            ["rank", "median step", "vs median", "compute", "vs median", "communication", "vs median", "why"],
            table_rows,
            "figures",
        )
        + note
    )
    return section("stragglers", "Stragglers", body, "The ranks whose step or compute time exceeds the median by 10 %.")


def sections(s: Summary) -> tuple[list[str], list[tuple[str, str]]]:
    """The page's trace sections for many ranks, and their navigation links."""
    detail = ranks_view.detail(s)
    which = "the worst stragglers" if ranks_view.stragglers(s) else "the lowest rank"
    tops = tops_section(dataclasses.replace(s, traces=detail)).replace(
        "Click a rank to open it.", f"Shown for {len(detail)} of {len(s.traces)} ranks: {which}."
    )
    return (
        [steps_section(s), gpu_section(s), stragglers_section(s), tops],
        [("steps", "Steps"), ("gpu", "GPU idle"), ("stragglers", "Stragglers"), ("tops", "Top ops & kernels")],
    )
