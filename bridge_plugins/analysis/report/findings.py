"""The report's Findings section: what is wrong, ranked, each linking to the timeline it is about."""

from __future__ import annotations

from html import escape

from bridge_plugins.analysis.analyzers.headlines import headlines
from bridge_plugins.analysis.findings.evidence_text import evidence_lines
from bridge_plugins.analysis.findings.model import HIGH, MEDIUM
from bridge_plugins.analysis.report.parts import cell, fmt_ms, section
from bridge_plugins.analysis.schema import Summary

_SEVERITY = {HIGH: "#c62828", MEDIUM: "#f58518"}


def _evidence(evidence: dict) -> str:
    items = "".join(f"<li><b>{escape(label)}</b>: {escape(text)}</li>" for label, text in evidence_lines(evidence))
    return f'<ul class="note">{items}</ul>'


def findings_section(s: Summary) -> str:
    findings = s.findings
    if not findings:
        return section(
            "findings", "Findings", '<p class="note">Nothing stands out (docs/diagnose.md lists what is checked).</p>'
        )
    blocks = []
    for i, f in enumerate(findings):
        share = "–" if f.share_of_step is None else f"{f.share_of_step:.1%} of the median step"
        link = f' · <a href="#{f.timeline}">timeline</a>' if f.timeline else ""
        advice = "".join(f"<li>{escape(a)}</li>" for a in f.advice)
        blocks.append(
            f'<details class="rank finding" id="finding-{i}" data-kind="{f.kind}" data-severity="{f.severity}" '
            f'data-timeline="{f.timeline or ""}"{" open" if i < 3 else ""}><summary>'
            f'<span class="tag" style="background:{_SEVERITY.get(f.severity, "#7a8494")}">{escape(f.severity)}</span> '
            f"<code>{escape(f.kind)}</code> {escape(f.title)}</summary>"
            f'<table class="figures"><tr><td>time at stake per step</td>{cell(f.time_us_per_step, fmt_ms)}'
            f"<td>{escape(share)}{link}</td></tr></table>"
            f"<h4>Evidence</h4>{_evidence(f.evidence)}<h4>What to try</h4><ol>{advice}</ol></details>"
        )
    intro = "Largest time at stake first (kinds and thresholds: docs/diagnose.md)."
    return section("findings", "Findings", "".join(blocks), intro)


def why_section(s: Summary) -> str:
    """Per rank, one line per analyzer (overlap, idle, launches, queue, memcpy, attribution, syncs)."""
    blocks = []
    for i, t in enumerate(s.traces):
        rows = "".join(f"<tr><td>{escape(q)}</td><td>{escape(a)}</td></tr>" for q, a in headlines(t.analyses))
        name = escape(t.file.rsplit("/", 1)[-1])
        blocks.append(
            f'<details class="rank"{" open" if i == 0 else ""}><summary>rank {t.rank} <span class="file">{name}</span>'
            f'</summary><table id="table-why-{i}" class="why">{rows}</table></details>'
        )
    intro = (
        "HolisticTraceAnalysis's questions, answered on every trace: communication/computation overlap, "
        "idle time per stream (host wait, kernel wait, other), kernel launch statistics, CUDA queue length, "
        "memcpy bandwidth, and the CPU operators whose launches own the GPU time."
    )
    return section("why", "Why: the analyzers", "".join(blocks), intro)
