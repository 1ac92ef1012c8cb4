"""The terminal summary of many ranks (``ranks_view.MANY_RANKS`` and more): a screen, not a row per rank.

The spread across ranks (quantiles and the rank with the highest value), the stragglers (at most
``STRAGGLER_ROWS``), and the top operators and kernels of the worst straggler (or the lowest
rank). ``summary --json`` and ``report`` still hold every rank.
"""

from __future__ import annotations

from pathlib import Path

from rich.table import Table
from rich.text import Text

from bridge_plugins.analysis import ranks_view
from bridge_plugins.analysis.schema import Summary
from bridge_plugins.analysis.text.cells import ms, step_ranges

STRAGGLER_ROWS = 8
TOP_ROWS = 5


def _fmt(label: str, v: float) -> str:
    return ms(v) if label.endswith("(us)") else f"{100 * v:.1f} %"


def _spread_table(s: Summary) -> Table:
    traces = s.traces
    steps = sorted({n for t in traces for n in t.steps.captured})
    t = Table(
        title=f"{len({tr.rank for tr in traces})} ranks, {len(traces)} traces, steps {step_ranges(steps)}: "
        "spread across ranks (step times in ms)",
        title_justify="left",
    )
    for col in ("figure", "min", "p10", "median", "p90", "max", "at rank"):
        t.add_column(col, justify="left" if col == "figure" else "right")
    for sp in ranks_view.spreads(s):
        label = sp.label.replace(" (us)", "")
        t.add_row(label, *(_fmt(sp.label, v) for v in (sp.min, sp.p10, sp.median, sp.p90, sp.max)), str(sp.max_rank))
    return t


def _stragglers_table(s: Summary) -> Table | Text:
    rows = ranks_view.stragglers(s)
    if not rows:
        return Text("No straggler: every rank's step and compute time is within 10 % of the median.")
    t = Table(
        title=f"Stragglers: {len(rows)} of {len(s.traces)} ranks; "
        f"{ranks_view.waiting_count(s)} ranks wait on them in communication",
        title_justify="left",
    )
    for col in ("rank", "step median", "vs median", "computation", "vs median", "why"):
        t.add_column(col, justify="left" if col in ("rank", "why") else "right")

    def rel(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:+.1f} %"

    for r in rows[:STRAGGLER_ROWS]:
        t.add_row(
            str(r.rank),
            ms(r.step_median_us),
            rel(r.step_vs_median),
            ms(r.computation_us),
            rel(r.computation_vs_median),
            Text(", ".join(r.straggler_reasons), style="bold red"),
        )
    if len(rows) > STRAGGLER_ROWS:
        t.caption = f"and {len(rows) - STRAGGLER_ROWS} more (summary --json or report lists every rank)"
    return t


def _top(title: str, rows: list[tuple[float, int, str]]) -> Table:
    """Rows of (time in us, calls, name)."""
    t = Table(title=title, title_justify="left", min_width=len(title))  # the title on one line
    t.add_column("ms", justify="right")
    t.add_column("calls", justify="right")
    t.add_column("name", overflow="ellipsis", no_wrap=True, max_width=90)
    for us, calls, name in rows[:TOP_ROWS]:
        t.add_row(ms(us), str(calls), name)
    return t


def renderables(s: Summary) -> list:
    out: list = [_spread_table(s), _stragglers_table(s)]
    for tr in ranks_view.detail(s, most=1):
        label = f"rank {tr.rank} ({Path(tr.file).name})"
        if ops := tr.top_cpu_ops:
            rows = [(o.self_us, o.calls, o.name) for o in ops]
            out.append(_top(f"Top operators by self time (CPU), {label}", rows))
        if kernels := tr.top_gpu_kernels:
            rows = [(k.total_us, k.calls, k.name) for k in kernels]
            out.append(_top(f"Top GPU kernels by time, {label}", rows))
    untimed = [t for t in s.traces if t.steps.note]
    if untimed:
        out.append(Text(f"{len(untimed)} traces have no step times: {untimed[0].steps.note}", style="yellow"))
    return out
