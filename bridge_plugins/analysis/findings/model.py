"""The typed finding, and the per-step figures every rule measures its time at stake against."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from bridge_plugins.analysis.schema import Finding, TraceSummary

__all__ = ["Finding", "StepBase", "finding", "median", "severity", "step_base", "timeline_id"]
__all__ += ["HIGH", "LOW", "MEDIUM"]

HIGH, MEDIUM, LOW = "high", "medium", "low"


def severity(share: float | None) -> str:
    if share is None:
        return LOW
    return HIGH if share >= 0.20 else MEDIUM if share >= 0.05 else LOW


@dataclass
class StepBase:
    """How to turn a trace's total into a per-step figure: ``steps`` captured (1 without step
    spans) and the median step time (None without)."""

    steps: int
    median_us: float | None

    def per_step(self, total_us: float) -> float:
        return total_us / self.steps

    def share(self, per_step_us: float) -> float | None:
        return per_step_us / self.median_us if self.median_us else None


def step_base(trace: TraceSummary) -> StepBase:
    st = trace.steps
    return StepBase(max(st.count, 1), st.median_us)


def finding(
    kind: str,
    title: str,
    base: StepBase,
    per_step_us: float,
    evidence: dict,
    advice: list[str],
    *,
    ranks: list[int] | None = None,
    timeline: str | None = None,
) -> Finding:
    """A Finding with its severity from the share of the step."""
    share = base.share(per_step_us)
    return Finding(
        kind=kind,
        severity=severity(share),
        title=title,
        time_us_per_step=per_step_us,
        share_of_step=share,
        evidence=evidence,
        advice=advice,
        ranks=list(ranks or []),
        timeline=timeline,
    )


def timeline_id(rank: int, which: str = "median") -> str:
    """The report's anchor for a rank's median or slowest step timeline."""
    return f"timeline-rank{rank}-{which}"


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None
