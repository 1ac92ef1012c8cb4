"""Which rank holds the others back, and which ranks wait on it.

In synchronous data-parallel training every rank waits at each collective for the slowest. Among
traces of the same steps, a **straggler** is a rank whose median step or computation time exceeds
the ranks' median by more than ``THRESHOLD``; the ranks **waiting** on it are the others whose
communication time is at or above the median. A group of one rank has no stragglers.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from bridge_plugins.analysis.schema import TraceSummary

THRESHOLD = 0.10


def _excess(value: float | None, median: float | None) -> float | None:
    """How far above the median, as a fraction of it (None where either is missing or 0)."""
    if value is None or not median:
        return None
    return value / median - 1.0


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def cross_rank(traces: Sequence[TraceSummary]) -> list[dict]:
    """The cross-rank table per group of traces with the same steps (summary's ``cross_rank``)."""
    groups: dict[tuple, list[TraceSummary]] = defaultdict(list)
    for t in traces:
        groups[tuple(t["steps"].captured)].append(t)
    out = []
    for steps, members in sorted(groups.items()):
        rows: list[dict[str, Any]] = [
            {
                "rank": t["rank"],
                "file": t["file"],
                "step_median_us": t["steps"].median_us,
                "computation_us": t["gpu"].computation_us if t["gpu"] else None,
                "communication_total_us": t["gpu"].communication_total_us if t["gpu"] else None,
            }
            for t in sorted(members, key=lambda t: (t["rank"] or 0, t["file"]))
        ]
        medians = {
            k: _median([r[k] for r in rows]) for k in ("step_median_us", "computation_us", "communication_total_us")
        }
        for r in rows:
            r["step_vs_median"] = _excess(r["step_median_us"], medians["step_median_us"])
            r["computation_vs_median"] = _excess(r["computation_us"], medians["computation_us"])
            r["communication_vs_median"] = _excess(r["communication_total_us"], medians["communication_total_us"])
            reasons = [k for k in ("step", "computation") if (r[f"{k}_vs_median"] or 0.0) > THRESHOLD]
            r["straggler"] = len(rows) > 1 and bool(reasons)
            r["straggler_reasons"] = reasons if r["straggler"] else []
        stragglers = [r["rank"] for r in rows if r["straggler"]]
        waiting = [
            r["rank"]
            for r in rows
            if stragglers
            and not r["straggler"]
            and r["communication_vs_median"] is not None
            and r["communication_vs_median"] >= 0.0
        ]
        for r in rows:
            r["waiting"] = r["rank"] in waiting
        out.append(
            {"steps": list(steps), "medians": medians, "ranks": rows, "stragglers": stragglers, "waiting": waiting}
        )
    return out
