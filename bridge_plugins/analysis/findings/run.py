"""``rank_findings(summary)``: every rule over a summary, largest time at stake first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bridge_plugins.analysis.findings import (
    exposed_communication,
    host_bound,
    memcpy,
    small_kernels,
    step_variance,
    straggler,
    sync_point,
)
from bridge_plugins.analysis.findings.model import Finding

if TYPE_CHECKING:
    from bridge_plugins.analysis.schema import Summary

PER_TRACE = (host_bound, exposed_communication, sync_point, small_kernels, memcpy, step_variance)
KINDS = tuple(m.KIND for m in PER_TRACE) + (straggler.KIND,)


def rank_findings(summary: Summary) -> list[Finding]:
    found = [f for t in summary["traces"] for rule in PER_TRACE for f in rule.check(t)]
    found += straggler.check(summary)
    return sorted(found, key=lambda f: (-f.time_us_per_step, f.kind, f.ranks))
