"""A comparison of two runs (run_compare.RunComparison) as rich tables: step time, both GPU breakdowns
side by side, top changes."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from bridge_plugins.analysis.run_compare import GPU_KEYS, DeltaRow, RunComparison
from bridge_plugins.analysis.text.cells import ms, short


def _delta(us: float | None) -> str:
    return "-" if us is None else f"{us / 1000:+,.2f}"


def _overview(c: RunComparison) -> Table:
    t = Table(title=f"Base vs new (times in ms; ops and kernels {c.normalized})", title_justify="left")
    for col in ("", "base", "new", "delta"):
        t.add_column(col, justify="left" if not col else "right")
    b, n = c.base, c.new
    t.add_row("traces / rank-steps", f"{b.traces} / {b.rank_steps}", f"{n.traces} / {n.rank_steps}", "")
    pct = "" if c.step_delta_pct is None else f" ({c.step_delta_pct:+.1f} %)"
    t.add_row("step time (median)", ms(b.step_median_us), ms(n.step_median_us), _delta(c.step_delta_us) + pct)
    for k in GPU_KEYS:
        if b.gpu or n.gpu:
            t.add_row(
                f"GPU {k[:-3].replace('_', ' ')} (mean per rank)",
                ms(getattr(b.gpu, k, None)),
                ms(getattr(n.gpu, k, None)),
                _delta(getattr(c.gpu_delta, k, None)),
            )
    return t


def _changes(title: str, rows: list[DeltaRow]) -> Table:
    t = Table(title=title, title_justify="left")
    for col in ("delta ms", "base ms", "new ms", "calls base", "calls new", "name"):
        t.add_column(col, justify="left" if col == "name" else "right", overflow="fold")
    for r in rows:
        t.add_row(
            _delta(r.delta_us),
            ms(r.base_us),
            ms(r.new_us),
            f"{r.base_calls:g}",
            f"{r.new_calls:g}",
            short(r.name),
        )
    return t


def print_compare(c: RunComparison, console: Console) -> None:
    console.print(_overview(c))
    for key, title in (
        ("ops_regressions", "CPU operators that got slower (self time)"),
        ("ops_improvements", "CPU operators that got faster (self time)"),
        ("kernels_regressions", "GPU kernels that got slower"),
        ("kernels_improvements", "GPU kernels that got faster"),
    ):
        rows: list[DeltaRow] = getattr(c, key)
        if rows:
            console.print(_changes(title, rows))
        else:
            console.print(Text(f"{title}: none"))
