"""The Summary as rich tables for the terminal (``bridge-plugins summary`` without --json).

Renders only what summarize() computed, so the terminal, ``--json`` and the HTML report show the
same figures.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from bridge_plugins.analysis import ranks_view
from bridge_plugins.analysis.analyzers.gpu_breakdown import PARTS, parts_us
from bridge_plugins.analysis.analyzers.step_breakdown import GPU_PARTS, ROLES, mean_breakdown
from bridge_plugins.analysis.schema import CrossRankGroup, Summary, TraceSummary
from bridge_plugins.analysis.text import many_ranks
from bridge_plugins.analysis.text.cells import ms, pct, short, step_ranges
from bridge_plugins.analysis.text.findings import analyses_table, findings_table
from bridge_plugins.analysis.text.terminal import plain_text


def _ranks_table(s: Summary) -> Table:
    gpu = any(tr.gpu for tr in s.traces)  # CPU-only traces: no GPU columns
    t = Table(
        title="Per rank: steps (ms)" + (" and GPU time (ms, share of the GPU span)" if gpu else ""),
        title_justify="left",
    )
    cols = ["rank", "steps", "step min", "median", "max"]
    cols += ["GPU span", "computation", "communication", "memcpy/set", "idle"] if gpu else []
    for col in cols:
        t.add_column(col, justify="left" if col in ("rank", "steps") else "right")
    for tr in s.traces:
        st, g = tr.steps, tr.gpu
        row = [str(tr.rank), step_ranges(st.captured), ms(st.min_us), ms(st.median_us), ms(st.max_us)]
        if gpu and g is None:
            row += ["no GPU events"] + ["-"] * len(PARTS)
        elif gpu and g is not None:
            span, parts = g.span_us, parts_us(g)
            row += [ms(span)] + [f"{ms(parts[k])} ({pct(parts[k], span)})" for k in PARTS]
        t.add_row(*row)
    return t


def _top_table(title: str, rows: list[tuple[float, int, str]], type_column: list[str] | None = None) -> Table:
    """Rows of (time in us, calls, name); ``type_column``: a kind column, one value per row."""
    t = Table(title=title, title_justify="left")
    t.add_column("ms", justify="right")
    t.add_column("calls", justify="right")
    if type_column is not None:
        t.add_column("type")
    t.add_column("name", overflow="fold")
    for i, (us, calls, name) in enumerate(rows):
        t.add_row(ms(us), str(calls), *([type_column[i]] if type_column is not None else []), short(name))
    return t


def _cross_rank_table(group: CrossRankGroup) -> Table:
    t = Table(
        title=f"Across ranks, steps {step_ranges(group.steps)}: stragglers and who waits on them",
        title_justify="left",
    )
    for col in (
        "rank",
        "step median",
        "vs median",
        "computation",
        "vs median",
        "communication",
        "vs median",
        "verdict",
    ):
        t.add_column(col, justify="left" if col in ("rank", "verdict") else "right")

    def rel(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:+.1f} %"

    for r in group.ranks:
        verdict = (
            ("straggler (" + ", ".join(r.straggler_reasons) + ")") if r.straggler else ("waiting" if r.waiting else "")
        )
        t.add_row(
            str(r.rank),
            ms(r.step_median_us),
            rel(r.step_vs_median),
            ms(r.computation_us),
            rel(r.computation_vs_median),
            ms(r.communication_total_us),
            rel(r.communication_vs_median),
            Text(verdict, style="bold red" if r.straggler else "yellow", no_wrap=True),
        )
    return t


def breakdown_line(tr: TraceSummary) -> str | None:
    """One line: where a rank's average step goes (TensorBoard's split); None without steps."""
    mean = mean_breakdown(tr.per_step)
    if mean is None:
        return None
    roles = [r for r in (*ROLES, "other") if tr.gpu is not None or r not in GPU_PARTS]
    parts = " · ".join(f"{r.replace('_', ' ')} {pct(mean[f'{r}_us'], mean['step_us'])}" for r in roles)
    n = len(tr.per_step)
    return f"rank {tr.rank}, where a step goes (torch-tb-profiler's split, mean of {n} steps, {ms(mean['step_us'])} ms): {parts}"


def _per_rank(s: Summary) -> list:
    out: list = []
    if s.traces:
        out.append(findings_table(s.findings))
        out.append(_ranks_table(s))
        out += [Text(line) for tr in s.traces if (line := breakdown_line(tr))]
        for tr in s.traces:
            if tr.steps.note:
                out.append(Text(f"rank {tr.rank} ({tr.file}): {tr.steps.note}", style="yellow"))
    for tr in s.traces:
        label = f"rank {tr.rank} ({Path(tr.file).name})"
        if ops := tr.top_cpu_ops:
            rows = [(o.self_us, o.calls, o.name) for o in ops]
            out.append(_top_table(f"Top operators by self time (CPU), {label}", rows))
        if kernels := tr.top_gpu_kernels:
            rows = [(k.total_us, k.calls, k.name) for k in kernels]
            out.append(_top_table(f"Top GPU kernels by time, {label}", rows, [k.type for k in kernels]))
        out.append(analyses_table(tr))
    for group in s.cross_rank:
        if len(group.ranks) > 1:
            out.append(_cross_rank_table(group))
    return out


def renderables(s: Summary) -> list:
    out = many_ranks.renderables(s) if ranks_view.is_many(s) else _per_rank(s)
    if s.memory:
        from bridge_plugins.analysis.text.memory import brief  # here: a trace's summary loads no snapshot reader

        out.append(Text(brief(s.memory) or "Memory snapshots: " + ", ".join(s.memory.snapshots)))
    return out


def to_text(s: Summary, width: int = 160) -> str:
    """Plain text (no colour) of the tables, for logs and the main job's end-of-run summary."""
    return plain_text([Group(*renderables(s))], width)


def print_summary(s: Summary, console: Console) -> None:
    for r in renderables(s):
        console.print(r)
