"""The console every text command prints through (``summary``, ``diagnose``, ``compare``, and the
main job's plain-text summary), and its one rule: a trace's text (names, files, findings) reaches the
terminal as it is, and never as a command to it.

Rich would otherwise read markup in that text (``x[bold]y`` loses its tag, a stray ``[/x]`` ends the
command with a traceback) and emoji codes (``:fire:``), and pass control characters through: an
operator named ``\\x1b]0;title\\x07`` would retitle the user's terminal, ``\\x1b[2J`` clear it.
"""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment

VERBATIM = {"markup": False, "emoji": False}
"""Text printed as it is, never read as rich markup or emoji codes (the tables' styles are rich's
objects, not markup)."""
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""What is taken out of the text printed: the C0 controls but tab and newline (ESC starts a terminal's
escape sequences), DEL, and the C1 controls (U+0080 to U+009F: U+009B is a CSI of its own). Rich
counts them as no width, so the tables' columns stay aligned."""


class _Shown:
    """A renderable as rich lays it out, with :data:`CONTROLS` taken out of the text it holds; rich's
    own control segments (cursor moves) and styles pass untouched."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for segment in console.render(self.renderable, options):
            if segment.control or not CONTROLS.search(segment.text):
                yield segment
            else:
                yield Segment(CONTROLS.sub("", segment.text), segment.style)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.renderable)


class TerminalConsole(Console):
    """Rich's console with :data:`VERBATIM` and every printed object shown as :class:`_Shown` does."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**{**VERBATIM, **kwargs})

    def print(self, *objects: Any, **kwargs: Any) -> None:
        super().print(*(_Shown(o) for o in objects), **kwargs)

    def on_broken_pipe(self) -> None:
        """``summary DIR | head``: let the CLI end with status 0 (rich itself exits with status 1)."""
        self.quiet = True
        raise BrokenPipeError


def console() -> TerminalConsole:
    """The terminal's width on a terminal; 160 columns into a pipe or file (rich would use 80)."""
    return TerminalConsole() if sys.stdout.isatty() else TerminalConsole(width=160)


def plain_text(renderables: Iterable[RenderableType], width: int = 160) -> str:
    """The renderables as plain text (no colour), laid out ``width`` columns wide."""
    out = TerminalConsole(width=width, record=True, file=io.StringIO(), color_system=None)
    for r in renderables:
        out.print(r)
    return out.export_text()
