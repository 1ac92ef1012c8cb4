"""``rank_findings(summary)``: every rule over a summary, largest time at stake first, except that a
rank's ``input_bound`` comes before its ``host_bound`` (the input is fixed first: a step that waits on
its data also launches late, and what is left of host_bound after it shows on the next profile)."""

from __future__ import annotations

from bridge_plugins.analysis.findings import (
    exposed_communication,
    host_bound,
    input_bound,
    memcpy,
    precision,
    small_kernels,
    step_variance,
    straggler,
    sync_point,
)
from bridge_plugins.analysis.findings.model import Finding
from bridge_plugins.analysis.schema import Summary

PER_TRACE = (
    input_bound,
    host_bound,
    exposed_communication,
    sync_point,
    small_kernels,
    memcpy,
    step_variance,
    precision,
)
KINDS = tuple(m.KIND for m in PER_TRACE) + (straggler.KIND,)


def rank_findings(summary: Summary) -> list[Finding]:
    found = [f for t in summary.traces for rule in PER_TRACE for f in rule.check(t)]
    found += straggler.check(summary)
    return _input_first(sorted(found, key=lambda f: (-f.time_us_per_step, f.kind, f.ranks)))


def _input_first(ranked: list[Finding]) -> list[Finding]:
    """Each ``input_bound`` moved just ahead of its rank's ``host_bound`` where that ranks higher."""
    for f in [f for f in ranked if f.kind == input_bound.KIND]:
        host = next((h for h in ranked if h.kind == host_bound.KIND and h.ranks == f.ranks), None)
        if host is not None and ranked.index(host) < ranked.index(f):
            ranked.remove(f)
            ranked.insert(ranked.index(host), f)
    return ranked
