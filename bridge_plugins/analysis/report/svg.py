"""Inline SVG charts for the HTML report: plain markup, no script, no external resource.

Every mark carries its exact figure in a ``data-*`` attribute (the number the JSON summary has)
and a ``<title>`` tooltip with the formatted one, so a test can read back what a chart shows and
a reader can hover for the value. Charts are ``<figure class="chart" id=...>`` elements.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape

WIDTH = 960
LABEL_W = 320
VALUE_W = 130
ROW_H = 26
FONT = 'font-family="system-ui, -apple-system, Segoe UI, Roboto, DejaVu Sans, sans-serif"'

Fmt = Callable[[float], str]


def attr(value: object) -> str:
    """A data attribute's value: numbers exactly as JSON writes them, text escaped."""
    if isinstance(value, float) and value.is_integer():
        value = repr(value)
    return escape(str(value), quote=True)


def data_attrs(data: dict[str, object] | None) -> str:
    return "".join(f' data-{k}="{attr(v)}"' for k, v in (data or {}).items() if v is not None)


def clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def figure(chart_id: str, title: str, svg_body: str, height: int, legend: str = "", note: str = "") -> str:
    return (
        f'<figure class="chart" id="{chart_id}" data-chart="{chart_id}"><figcaption>{escape(title)}</figcaption>'
        f'{legend}<svg viewBox="0 0 {WIDTH} {height}" width="100%" role="img" aria-label="{escape(title, quote=True)}" '
        f'{FONT} font-size="13">{svg_body}</svg>' + (f'<p class="note">{note}</p>' if note else "") + "</figure>"
    )


def legend(parts: Sequence[tuple[str, str, str]]) -> str:
    items = "".join(f'<span class="key"><i style="background:{c}"></i>{escape(label)}</span>' for _, label, c in parts)
    return f'<div class="legend">{items}</div>'


def _label(y: float, text: str, bold: bool = False) -> str:
    weight = ' font-weight="600"' if bold else ""
    return (
        f'<text x="{LABEL_W - 10}" y="{y}" text-anchor="end" dominant-baseline="middle"{weight}>'
        f"<title>{escape(text)}</title>{escape(clip(text, 44))}</text>"
    )


def stacked_hbars(
    chart_id: str, title: str, rows: list[dict], parts: Sequence[tuple[str, str, str]], fmt: Fmt, note: str = ""
) -> str:
    """One bar per row, split into ``parts`` (key, label, colour), on one absolute scale.

    rows: ``{"label", "values": {key: number}, "total": number, "data": {...}}``."""
    top = max((r["total"] for r in rows), default=0) or 1
    span = WIDTH - LABEL_W - VALUE_W
    body = []
    for i, r in enumerate(rows):
        y = 8 + i * (ROW_H + 8)
        x = float(LABEL_W)
        body.append(f'<g class="bar"{data_attrs(r.get("data"))}>' + _label(y + ROW_H / 2, r["label"]))
        for key, label, colour in parts:
            v = r["values"].get(key) or 0
            w = v / top * span
            share = f" ({v / r['total']:.1%})" if r["total"] else ""
            body.append(
                f'<rect class="seg seg-{key}" data-key="{key}" data-value="{attr(v)}" x="{x:.2f}" y="{y}" '
                f'width="{w:.2f}" height="{ROW_H}" fill="{colour}"><title>{escape(label)}: {fmt(v)}{share}</title></rect>'
            )
            x += w
        body.append(
            f'<text x="{x + 8:.2f}" y="{y + ROW_H / 2}" dominant-baseline="middle" class="value">'
            f"{fmt(r['total'])}</text></g>"
        )
    height = 16 + len(rows) * (ROW_H + 8)
    return figure(chart_id, title, "".join(body), height, legend(parts), note)


def range_hbars(chart_id: str, title: str, rows: list[dict], fmt: Fmt, note: str = "") -> str:
    """Median bar with a min-max whisker per row: ``{"label", "min", "median", "max", "flag", "data"}``;
    ``flag`` ('straggler') colours the bar."""
    top = max((r["max"] for r in rows), default=0) or 1
    span = WIDTH - LABEL_W - 2 * VALUE_W  # room for "median (min – max)"
    body = []
    for i, r in enumerate(rows):
        y = 8 + i * (ROW_H + 8)
        colour = "#d62728" if r.get("flag") else "#4c78a8"
        x0, xm, x1 = (LABEL_W + r[k] / top * span for k in ("min", "median", "max"))
        mid = y + ROW_H / 2
        body.append(
            f'<g class="bar"{data_attrs(r.get("data"))}>'
            + _label(mid, r["label"], bool(r.get("flag")))
            + f'<rect class="median" x="{LABEL_W}" y="{y + 3}" width="{xm - LABEL_W:.2f}" height="{ROW_H - 6}" '
            f'fill="{colour}" opacity="0.85"><title>median {fmt(r["median"])}</title></rect>'
            f'<line class="whisker" x1="{x0:.2f}" x2="{x1:.2f}" y1="{mid}" y2="{mid}" stroke="#222" stroke-width="2"/>'
            f'<line x1="{x0:.2f}" x2="{x0:.2f}" y1="{y + 6}" y2="{y + ROW_H - 6}" stroke="#222" stroke-width="2"/>'
            f'<line x1="{x1:.2f}" x2="{x1:.2f}" y1="{y + 6}" y2="{y + ROW_H - 6}" stroke="#222" stroke-width="2"/>'
            f'<text x="{x1 + 8:.2f}" y="{mid}" dominant-baseline="middle" class="value">{fmt(r["median"])} '
            f'<tspan fill="#666">({fmt(r["min"])} – {fmt(r["max"])})</tspan></text></g>'
        )
    return figure(chart_id, title, "".join(body), 16 + len(rows) * (ROW_H + 8), note=note)


def value_hbars(chart_id: str, title: str, rows: list[dict], fmt: Fmt, colour: str = "#4c78a8", note: str = "") -> str:
    """Plain horizontal bars: ``{"label", "value", "colour"?, "data"}``."""
    top = max((r["value"] for r in rows), default=0) or 1
    span = WIDTH - LABEL_W - VALUE_W
    body = []
    for i, r in enumerate(rows):
        y = 6 + i * (ROW_H + 4)
        w = r["value"] / top * span
        body.append(
            f'<g class="bar"{data_attrs(r.get("data"))}>'
            + _label(y + ROW_H / 2, r["label"])
            + f'<rect x="{LABEL_W}" y="{y}" width="{w:.2f}" height="{ROW_H}" fill="{r.get("colour", colour)}">'
            f"<title>{escape(r['label'])}: {fmt(r['value'])}</title></rect>"
            f'<text x="{LABEL_W + w + 8:.2f}" y="{y + ROW_H / 2}" dominant-baseline="middle" class="value">'
            f"{fmt(r['value'])}</text></g>"
        )
    return figure(chart_id, title, "".join(body), 12 + len(rows) * (ROW_H + 4), note=note)


def deviation_bars(
    chart_id: str, title: str, rows: list[dict], series: Sequence[tuple[str, str, str]], note: str = ""
) -> str:
    """Per row, one bar per series showing a fraction above (right) or below (left) the median:
    ``{"label", "values": {key: fraction}, "flag", "data"}``."""
    limit = max([abs(r["values"].get(k) or 0) for r in rows for k, _, _ in series] + [0.05])
    half = (WIDTH - LABEL_W - 140) / 2  # 70 px each side for the percentage text
    centre = LABEL_W + 70 + half
    bar_h = (ROW_H - 4) / max(1, len(series))
    body = [f'<line x1="{centre}" x2="{centre}" y1="0" y2="{16 + len(rows) * (ROW_H + 10)}" stroke="#888"/>']
    for i, r in enumerate(rows):
        y = 8 + i * (ROW_H + 10)
        body.append(
            f'<g class="bar"{data_attrs(r.get("data"))}>' + _label(y + ROW_H / 2, r["label"], bool(r.get("flag")))
        )
        for j, (key, label, colour) in enumerate(series):
            v = r["values"].get(key)
            if v is None:
                continue
            w = abs(v) / limit * half
            x = centre if v >= 0 else centre - w
            by = y + 2 + j * bar_h
            body.append(
                f'<rect class="dev dev-{key}" data-key="{key}" data-value="{attr(v)}" x="{x:.2f}" y="{by:.2f}" '
                f'width="{w:.2f}" height="{bar_h - 1:.2f}" fill="{colour}"><title>{escape(label)}: {v:+.1%} vs median'
                f'</title></rect><text x="{(x + w + 6) if v >= 0 else (x - 6):.2f}" y="{by + bar_h / 2:.2f}" '
                f'dominant-baseline="middle" text-anchor="{"start" if v >= 0 else "end"}" font-size="11">{v:+.1%}</text>'
            )
        body.append("</g>")
    return figure(chart_id, title, "".join(body), 16 + len(rows) * (ROW_H + 10), legend(series), note)


def line_chart(
    chart_id: str,
    title: str,
    xs: list[float],
    series: Sequence[tuple[str, str, list[float | None]]],
    fmt_y: Fmt,
    x_label: str,
    marker: tuple[float, float, str] | None = None,
    note: str = "",
) -> str:
    """Step lines over ``xs``; ``marker`` = (x, y, text) marks the peak. Missing values (None) are skipped."""
    h, left, right, top_pad, bottom = 300, 80, 20, 16, 40
    ys = [v for _, _, vals in series for v in vals if v is not None]
    y_max = (max(ys) if ys else 0) * 1.08 or 1
    x0, x1 = (min(xs), max(xs)) if xs else (0, 1)
    x1 = x1 if x1 > x0 else x0 + 1

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * (WIDTH - left - right)

    def py(y: float) -> float:
        return top_pad + (1 - y / y_max) * (h - top_pad - bottom)

    body = []
    for k in range(5):
        v = y_max * k / 4
        body.append(
            f'<line x1="{left}" x2="{WIDTH - right}" y1="{py(v):.2f}" y2="{py(v):.2f}" stroke="#e5e5e5"/>'
            f'<text x="{left - 6}" y="{py(v):.2f}" text-anchor="end" dominant-baseline="middle" '
            f'font-size="11" fill="#555">{fmt_y(v)}</text>'
        )
    for k in range(5):
        x = x0 + (x1 - x0) * k / 4
        tick = f"{x:,.0f}" if x1 - x0 >= 100 else f"{x:.3g}"
        body.append(
            f'<text x="{px(x):.2f}" y="{h - bottom + 16}" text-anchor="middle" font-size="11" fill="#555">{tick}</text>'
        )
    body.append(
        f'<text x="{(left + WIDTH - right) / 2}" y="{h - 6}" text-anchor="middle" font-size="12" fill="#333">'
        f"{escape(x_label)}</text>"
    )
    for name, colour, vals in series:
        pts = [(px(x), py(v)) for x, v in zip(xs, vals, strict=False) if v is not None]
        path = " ".join(f"{a:.2f},{b:.2f}" for a, b in pts)
        body.append(
            f'<polyline class="series series-{escape(name)}" points="{path}" fill="none" stroke="{colour}" '
            f'stroke-width="2"><title>{escape(name)}</title></polyline>'
        )
    if marker:
        mx, my, text = marker
        anchor = "end" if px(mx) > WIDTH * 0.7 else "start"
        dx = -10 if anchor == "end" else 10
        body.append(
            f'<circle class="peak" cx="{px(mx):.2f}" cy="{py(my):.2f}" r="5" fill="#d62728"/>'
            f'<text x="{px(mx) + dx:.2f}" y="{py(my) - 8:.2f}" text-anchor="{anchor}" font-weight="600" '
            f'fill="#d62728">{escape(text)}</text>'
        )
    parts = [(n, n, c) for n, c, _ in series]
    return figure(chart_id, title, "".join(body), h, legend(parts), note)
