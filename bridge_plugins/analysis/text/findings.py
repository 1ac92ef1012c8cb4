"""Findings and the analyzers' figures as rich renderables for the terminal (summary, diagnose)."""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from bridge_plugins.analysis.analyzers.headlines import headlines
from bridge_plugins.analysis.findings.evidence_text import evidence_lines
from bridge_plugins.analysis.findings.model import HIGH, MEDIUM, Finding
from bridge_plugins.analysis.schema import TraceSummary
from bridge_plugins.analysis.text.cells import ms

_STYLE = {HIGH: "bold red", MEDIUM: "yellow"}


def findings_table(findings: list[Finding]) -> Table | Text:
    if not findings:
        return Text("Findings: nothing stands out (see docs/diagnose.md for what is checked).", style="green")
    t = Table(title="Findings, largest time at stake first", title_justify="left")
    t.add_column("#", justify="right")
    for col in ("kind", "severity"):
        t.add_column(col, justify="left")
    t.add_column("ms/step", justify="right")
    t.add_column("share", justify="right")
    t.add_column("what", overflow="fold")
    for i, f in enumerate(findings, 1):
        share = "-" if f.share_of_step is None else f"{100 * f.share_of_step:.1f} %"
        t.add_row(
            str(i), f.kind, Text(f.severity, style=_STYLE.get(f.severity, "")), ms(f.time_us_per_step), share, f.title
        )
    return t


def evidence(findings: list[Finding]) -> list[Text]:
    """Each finding's evidence, numbered as in the table, one readable line per entry (ms, %)."""
    out = []
    for i, f in enumerate(findings, 1):
        out.append(Text(f"#{i} {f.kind}, evidence:", style="bold"))
        out += [Text(f"  {label}: {text}") for label, text in evidence_lines(f.evidence)]
    return out


class Bullet:
    """``  - text``, wrapped to the console's width under its own text (rich wraps from column 0)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for i, line in enumerate(Text(self.text).wrap(console, max(20, options.max_width - 4))):
            line.rstrip()
            yield Text("  - " if i == 0 else "    ") + line


def advice(findings: list[Finding], limit: int = 3) -> list[Text | Bullet]:
    """What to try for each kind found, once per kind, in ranking order."""
    out: list[Text | Bullet] = []
    seen = set()
    for f in findings:
        if f.kind in seen:
            continue
        seen.add(f.kind)
        out.append(Text(f"{f.kind}: try", style="bold"))
        out += [Bullet(a) for a in f.advice[:limit]]
    return out


def analyses_table(trace: TraceSummary) -> Table:
    """One row per analyzer with its headline figures for one trace."""
    t = Table(title=f"Why, rank {trace.rank}", title_justify="left")
    t.add_column("question")
    t.add_column("answer", overflow="fold")
    for question, answer in headlines(trace.analyses):
        t.add_row(question, answer)
    return t
