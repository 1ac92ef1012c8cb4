"""Small shared pieces of the HTML report: number formats, tables, section frames.

Figures shown are formatted here; the exact number from the summary JSON rides along in a
``data-value`` attribute of the same element, so the browser test can check one against the other.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from html import escape
from typing import TypeVar

from bridge_plugins.analysis.report.svg import attr, clip
from bridge_plugins.analysis.schema import TraceSummary
from bridge_plugins.analysis.text.memory import fmt_bytes as _fmt_bytes

T = TypeVar("T", float, float | None)

COLOURS = {
    "computation": "#4c78a8",
    "communication": "#f58518",
    "memory": "#54a24b",
    "idle": "#bab0ac",
    "other": "#9d755d",
}


def count(n: int, noun: str) -> str:
    """``1 trace``, ``2 traces``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def fmt_ms(us: float | None) -> str:
    return "–" if us is None else f"{us / 1000:,.2f} ms"


def fmt_ms_signed(us: float | None) -> str:
    """A change: ``+1.25 ms`` or ``-0.40 ms``."""
    return ("+" if us is not None and us > 0 else "") + fmt_ms(us)


def fmt_pct(fraction: float | None) -> str:
    return "–" if fraction is None else f"{fraction:+.1%}"


def fmt_bytes(n: float | None) -> str:
    return _fmt_bytes(n)


def cell(value: T, fmt: Callable[[T], str], cls: str = "num") -> str:
    """A table cell showing ``fmt(value)`` with the exact value in data-value and the formatter's
    name (one of this module's ``fmt_*``) in data-format."""
    data = f' data-value="{attr(value)}" data-format="{fmt.__name__}"' if value is not None else ""
    return f'<td class="{cls}"{data}>{escape(fmt(value))}</td>'


def name_cell(name: str, width: int = 110) -> str:
    return f'<td class="name" title="{escape(name, quote=True)}">{escape(clip(name, width))}</td>'


def table(table_id: str, headers: Sequence[str], rows: list[str], cls: str = "") -> str:
    """A table; a header sits over its column as the first row's cell does (``num``: right-aligned)."""
    first = re.findall(r"<td(?: class=\"([^\"]*)\")?", rows[0]) if rows else []
    classes = [' class="num"' if i < len(first) and "num" in first[i].split() else "" for i in range(len(headers))]
    head = "".join(f"<th{c}>{escape(h)}</th>" for c, h in zip(classes, headers, strict=True))
    body = "".join(f"<tr>{r}</tr>" for r in rows) or f'<tr><td colspan="{len(headers)}" class="empty">none</td></tr>'
    return f'<table id="{table_id}" class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def section(section_id: str, title: str, body: str, intro: str = "") -> str:
    intro_html = f'<p class="intro">{intro}</p>' if intro else ""
    return f'<section id="{section_id}"><h2>{escape(title)}</h2>{intro_html}{body}</section>'


def card(label: str, value: str, sub: str = "", data_value: object = None, cls: str = "") -> str:
    data = f' data-value="{attr(data_value)}"' if data_value is not None else ""
    sub_html = f'<div class="sub">{escape(sub)}</div>' if sub else ""
    return (
        f'<div class="card {cls}"{data}><div class="label">{escape(label)}</div>'
        f'<div class="big">{escape(value)}</div>{sub_html}</div>'
    )


def rank_label(trace: TraceSummary, traces: Sequence[TraceSummary]) -> str:
    """``rank 3``, or ``rank 3 · file`` when one rank has several traces (e.g. two windows)."""
    same = [t for t in traces if t.rank == trace.rank]
    label = f"rank {trace.rank}"
    if len(same) > 1:
        label += f" · {trace.file.rsplit('/', 1)[-1]}"
    return label
