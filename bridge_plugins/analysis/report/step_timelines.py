"""The report's step timelines: per rank, the median and the slowest step as inline SVG.

One lane per CPU thread (operators stacked by nesting depth) and per GPU stream (kernels coloured
by category); each bar has a ``<title>`` tooltip (name and duration) and a label where it fits. No
script: hover tooltips are the browser's own. Each figure's id is the anchor findings link to.
"""

from __future__ import annotations

from html import escape

from bridge_plugins.analysis.analyzers.step_timelines import MAX_DEPTH, Bar, Lane, StepTimeline
from bridge_plugins.analysis.findings.model import timeline_id
from bridge_plugins.analysis.report.parts import COLOURS, fmt_ms, section
from bridge_plugins.analysis.report.svg import FONT, WIDTH, attr, clip, legend
from bridge_plugins.analysis.schema import Summary

LANE_LABEL_W = 150
ROW = 15  # one nesting level / one GPU lane
GAP = 6
AXIS = 22
CPU_COLOUR = "#72b7b2"
CHAR_W = 6.2  # px per character of the 10.5 px label font


def _lane_height(lane: Lane) -> int:
    return ROW * (1 + max((b.depth for b in lane.bars), default=0)) if lane.kind == "cpu" else ROW


def _axis(duration: float, step_us: float, scale: float) -> str:
    ticks = []
    for i in range(6):
        t = duration * i / 5
        x = LANE_LABEL_W + t * scale
        anchor = "end" if i == 5 else "middle"
        ticks.append(
            f'<line x1="{x:.1f}" y1="{AXIS - 6}" x2="{x:.1f}" y2="{AXIS}" stroke="#7a8494"/>'
            f'<text x="{x:.1f}" y="{AXIS - 9}" text-anchor="{anchor}" font-size="10">{t / 1000:,.1f} ms</text>'
        )
    end = LANE_LABEL_W + step_us * scale
    ticks.append(
        f'<line class="step-end" x1="{end:.1f}" y1="{AXIS}" x2="{end:.1f}" y2="100%" stroke="#c62828" '
        f'stroke-dasharray="3 3"><title>end of the ProfilerStep on the CPU: {fmt_ms(step_us)}</title></line>'
    )
    return "".join(ticks)


def _bar(b: Bar, x: float, y: float, w: float, h: float, colour: str) -> str:
    label = ""
    if w >= 40:
        label = (
            f'<text x="{x + 2:.1f}" y="{y + h - 4:.1f}" font-size="10.5" fill="#fff" pointer-events="none">'
            f"{escape(clip(b.name, int(w / CHAR_W)))}</text>"
        )
    return (
        f'<g class="ev"><rect class="ev-{b.category}" x="{x:.2f}" y="{y:.1f}" width="{max(w, 0.5):.2f}" height="{h}" '
        f'fill="{colour}" data-value="{attr(b.duration_us)}"><title>{escape(b.name)}: {fmt_ms(b.duration_us)} '
        f"({escape(b.category)})</title></rect>{label}</g>"
    )


def timeline_svg(rank: int, tl: StepTimeline) -> str:
    scale = (WIDTH - LANE_LABEL_W - 8) / (tl.duration_us or 1.0)
    body, y = [_axis(tl.duration_us, tl.step_us, scale)], AXIS + 4
    for lane in tl.lanes:
        h = _lane_height(lane)
        dropped = f" ({lane.dropped} shortest not drawn)" if lane.dropped else ""
        body.append(
            f'<g class="lane lane-{lane.kind}" data-label="{attr(lane.label)}" data-bars="{len(lane.bars)}">'
            f'<text x="{LANE_LABEL_W - 8}" y="{y + ROW - 4}" text-anchor="end" font-size="11">'
            f"<title>{escape(lane.label + dropped)}</title>{escape(lane.label)}</text>"
            f'<rect x="{LANE_LABEL_W}" y="{y}" width="{WIDTH - LANE_LABEL_W - 8}" height="{h}" fill="#f3f4f6"/>'
        )
        for b in lane.bars:
            colour = CPU_COLOUR if lane.kind == "cpu" else COLOURS.get(b.category, COLOURS["other"])
            body.append(
                _bar(b, LANE_LABEL_W + b.start_us * scale, y + b.depth * ROW, b.duration_us * scale, ROW - 1, colour)
            )
        body.append("</g>")
        y += h + GAP
    title = (
        f"rank {rank}, {tl.which} step ({tl.step}): {fmt_ms(tl.step_us)} on the CPU, "
        f"{fmt_ms(tl.duration_us)} until its GPU work ends"
    )
    parts = [("cpu", "CPU operator", CPU_COLOUR)] + [
        (k, k, COLOURS[k]) for k in ("computation", "communication", "memory", "other")
    ]
    return (
        f'<figure class="chart timeline" id="{timeline_id(rank, tl.which)}" data-rank="{rank}" data-step="{tl.step}" '
        f'data-which="{tl.which}"><figcaption>{escape(title)}</figcaption>{legend(parts)}'
        f'<svg viewBox="0 0 {WIDTH} {y + 4}" width="100%" role="img" aria-label="{escape(title, quote=True)}" '
        f'{FONT} font-size="11">{"".join(body)}</svg></figure>'
    )


def timelines_section(s: Summary) -> str:
    blocks, seen = [], set()
    for t in s.traces:
        if t.rank in seen:  # one timeline per rank (its first trace): the anchors findings link to
            continue
        seen.add(t.rank)
        for tl in t.analyses.timelines:
            blocks.append(timeline_svg(t.rank, tl))
    if not blocks:
        return section("timeline", "Step timelines", '<p class="note">No ProfilerStep spans: no step to draw.</p>')
    intro = (
        "Per rank, the median and the slowest captured step: CPU threads (operators, nested up to "
        f"{MAX_DEPTH + 1} levels) and GPU streams (kernels by category). Hover a bar for its name and "
        "duration; the dashed red line is where the step ends on the CPU (GPU work it queued may run later)."
    )
    return section("timeline", "Step timelines", "".join(blocks), intro)
