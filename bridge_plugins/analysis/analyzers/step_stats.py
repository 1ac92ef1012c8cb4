"""Step times from the ``ProfilerStep#N`` spans that torch.profiler's schedule records on the CPU.

A step's time is its span on the CPU thread: from the start of step N's Python code to the start
of step N+1's (``prof.step()`` closes one and opens the next). A trace recorded without a schedule
has no such spans; it is still summarized, without step times, and says so.
"""

from __future__ import annotations

import statistics

from bridge_plugins.analysis.figures import StepStats

NO_STEPS_NOTE = (
    "no ProfilerStep annotations (recorded without a torch.profiler schedule): no step times; "
    "the other figures cover the whole trace"
)


def step_stats(steps: dict[int, float]) -> StepStats:
    """The step times of ProfilerStep number -> duration (us); no steps: a note that says why."""
    if not steps:
        return StepStats(captured=[], count=0, min_us=None, median_us=None, max_us=None, note=NO_STEPS_NOTE)
    times = list(steps.values())
    return StepStats(
        captured=sorted(steps),
        count=len(steps),
        min_us=min(times),
        median_us=statistics.median(times),
        max_us=max(times),
        note=None,
    )
