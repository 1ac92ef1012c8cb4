"""``bridge-plugins report``'s page: one self-contained HTML file that opens offline, rendered from a
summary (and a comparison) that page.build computed; nothing is read or computed here.

Inline SVG drawn here and inline CSS; no script and no external resource, which a
Content-Security-Policy in the page also enforces (``default-src 'none'``), so the file renders
the same on an air-gapped login node, in a mail attachment or from a CI artifact. The charts are
svg.py's, the sections traces.py's, memory.py's and run_compare.py's.
"""

from __future__ import annotations

import datetime
import statistics
from html import escape
from pathlib import Path

from bridge_plugins.analysis import ranks_view
from bridge_plugins.analysis.memory.results import SnapshotComparison
from bridge_plugins.analysis.memory.snapshot import main_device
from bridge_plugins.analysis.report import heatmap
from bridge_plugins.analysis.report.findings import findings_section, why_section
from bridge_plugins.analysis.report.memory import memory_section
from bridge_plugins.analysis.report.parts import card, count, fmt_bytes, fmt_ms, section
from bridge_plugins.analysis.report.run_compare import compare_section
from bridge_plugins.analysis.report.step_breakdown import step_breakdown_section
from bridge_plugins.analysis.report.step_timelines import timelines_section
from bridge_plugins.analysis.report.traces import gpu_section, steps_section, stragglers_section, tops_section
from bridge_plugins.analysis.run_compare import RunComparison
from bridge_plugins.analysis.schema import Summary
from bridge_plugins.jobdir.atomic_write import write_text_atomically

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
CSS = """
*{box-sizing:border-box}body{margin:0;background:#f6f7f9;color:#1d2430;font:14px/1.45 system-ui,-apple-system,
'Segoe UI',Roboto,'DejaVu Sans',sans-serif}header{background:#1d2430;color:#fff;padding:18px 32px}
header h1{margin:0;font-size:22px}header .inputs{color:#b8c2d0;font-size:12px;margin-top:4px;word-break:break-all}
nav{background:#fff;border-bottom:1px solid #dde1e7;padding:8px 32px;position:sticky;top:0;z-index:1}
nav a{margin-right:18px;color:#2b5d9b;text-decoration:none;font-weight:600}main{max-width:1180px;margin:0 auto;
padding:8px 32px 48px}section{background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:18px 22px;
margin:18px 0}h2{margin:0 0 6px;font-size:18px}h3{font-size:15px;margin:18px 0 8px}h4{font-size:13px;
margin:16px 0 6px;color:#374151}.intro,.note{color:#5b6472;font-size:12.5px;margin:4px 0 10px}
.file{color:#7a8494;font-weight:400;font-size:12px;margin-left:6px}.cards{display:flex;gap:12px;flex-wrap:wrap;
margin:10px 0}.card{flex:1 1 180px;min-width:0;overflow-wrap:anywhere;border:1px solid #dde1e7;border-radius:8px;padding:10px 14px;
background:#fbfcfd}
.card .label{font-size:12px;color:#5b6472;text-transform:uppercase;letter-spacing:.04em}.card .big{font-size:22px;
font-weight:700;margin:2px 0}.card .sub{font-size:12px;color:#5b6472}.card.alert .big,.delta.worse .big{color:#c62828}
.delta.better .big{color:#2e7d32}figure.chart{margin:12px 0 16px}figcaption{font-weight:600;margin-bottom:4px}
.legend{display:flex;gap:16px;flex-wrap:wrap;font-size:12px;color:#374151;margin:2px 0 6px}.legend i{display:inline-block;
width:11px;height:11px;border-radius:2px;margin-right:5px;vertical-align:-1px}svg text.value{font-size:12px;fill:#1d2430}
table{border-collapse:collapse;width:100%;font-size:12.5px;margin:6px 0 10px}th{text-align:left;color:#5b6472;
font-weight:600;border-bottom:2px solid #dde1e7;padding:5px 8px}th.num{text-align:right}td{border-bottom:1px solid #eef0f3;padding:4px 8px}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}td.name{font-family:ui-monospace,
'DejaVu Sans Mono',monospace;font-size:12px;word-break:break-all}td.empty{color:#7a8494;font-style:italic}
td.meter{width:120px}td.meter i{display:block;height:10px;border-radius:2px}.tag{color:#fff;border-radius:3px;
padding:1px 6px;font-size:11px}details.rank{border-top:1px solid #eef0f3;padding:6px 0}details.rank>summary{
cursor:pointer;font-weight:600;padding:4px 0}.two{display:grid;grid-template-columns:1fr 1fr;gap:20px}
@media (max-width:900px){.two{grid-template-columns:1fr}}.verdict{background:#fff7e6;border-left:4px solid #f58518;
padding:8px 12px;margin:8px 0}.alert,.problems{background:#fdecea;border-left:4px solid #c62828;padding:8px 12px}
.problems li{word-break:break-all}footer{color:#7a8494;font-size:12px;text-align:center;margin:20px}
"""


def _overview(s: Summary) -> str:
    traces = s.traces
    medians = sorted(t.steps.median_us for t in traces if t.steps.median_us is not None)
    stragglers = sorted({r for g in s.cross_rank for r in g.stragglers})
    cards = card("ranks", str(len({t.rank for t in traces})), count(len(traces), "trace"))
    if medians:
        mid = statistics.median(medians)
        cards += card("median step", fmt_ms(mid), "median of the ranks' medians", mid, "median-step")
    cards += card(
        "stragglers",
        ", ".join(f"rank {r}" for r in stragglers) or "none",
        "see Stragglers",
        cls="alert" if stragglers else "",
    )
    devices = [main_device(f) for f in (s.memory.files if s.memory else [])]
    peaks = [d.peak_allocated for d in devices if d]
    if peaks:
        cards += card("peak memory", fmt_bytes(max(peaks)), "allocated, highest snapshot")
    return f'<div class="cards" id="overview">{cards}</div>'


def render(
    summary: Summary, comparison: RunComparison | None = None, memory_comparison: SnapshotComparison | None = None
) -> str:
    """The page for a Summary (``analysis.pipeline.summarize``) and optional comparisons."""
    problems = summary.problems + (comparison.problems if comparison else [])
    problems_html = ""
    if problems:
        items = "".join(f"<li>{escape(p.file)}: {escape(p.error)}</li>" for p in problems)
        problems_html = f'<section class="problems" id="problems"><b>Files skipped</b><ul>{items}</ul></section>'
    if ranks_view.is_many(summary):
        sections, links = heatmap.sections(summary)
    elif summary.traces:
        sections = [findings_section(summary), steps_section(summary), step_breakdown_section(summary)]
        sections.append(timelines_section(summary))
        sections += [gpu_section(summary), why_section(summary), stragglers_section(summary), tops_section(summary)]
        links = [("findings", "Findings"), ("steps", "Steps"), ("step-breakdown", "Step breakdown")]
        links += [("timeline", "Timelines"), ("gpu", "GPU time")]
        links += [("why", "Why")]
        links += [("stragglers", "Stragglers"), ("tops", "Top ops & kernels")]
    else:
        sections = [section("steps", "Traces", '<p class="note">No PyTorch traces here: only memory snapshots.</p>')]
        links = []
    sections.append(memory_section(summary.memory))
    links.append(("memory", "Memory"))
    if comparison:
        sections.append(compare_section(comparison, memory_comparison))
        links.append(("compare", "Comparison"))
    nav = "".join(f'<a href="#{i}">{escape(t)}</a>' for i, t in links)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    inputs = escape(", ".join(summary.inputs))
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>bridge-plugins report</title><style>{CSS}</style></head><body>"
        f'<header><h1>Profile report</h1><div class="inputs">{inputs}</div></header><nav>{nav}</nav><main>'
        f"{problems_html}{_overview(summary)}{''.join(sections)}</main>"
        f"<footer>bridge-plugins report · {now} · self-contained: no script, no network</footer></body></html>"
    )


def write_report(html: str, out: str | Path, replace: bool = True) -> Path:
    """Write atomically (a reader never sees half a file; jobdir.atomic_write); returns the path. With
    ``replace=False`` an existing ``out`` is left alone: FileExistsError."""
    return write_text_atomically(Path(out), html, replace=replace, mode=0o644)
