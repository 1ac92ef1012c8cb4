"""Rank 0's progress.json for ``bridge-plugins trigger``: the latest sampled step and the step rate.

The trigger plans a request's start step from these (far enough ahead that every rank reads the
request in time), so the rate is taken over the last few samples, not from a single step.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bridge_plugins.config.profiling import ProfilingConfig
from bridge_plugins.jobdir.on_demand import new_progress, write_progress


def publish_progress(
    output_dir: Path,
    state: str,
    samples: Sequence[tuple[int, float]],
    cfg: ProfilingConfig,
    poll_interval_s: float,
    world_size: int,
    can_record_memory: bool,
) -> None:
    """Write progress.json from ``samples``, (step, epoch seconds at its start) oldest first."""
    step, step_time = samples[-1] if samples else (None, None)
    rate = None
    if len(samples) >= 2 and samples[-1][0] > samples[0][0]:
        rate = (samples[-1][0] - samples[0][0]) / max(samples[-1][1] - samples[0][1], 1e-9)
    window = [cfg.profile_step_start, cfg.profile_step_end] if cfg.has_window else None
    write_progress(
        output_dir,
        new_progress(
            state=state,
            step=step,
            step_time=step_time,
            steps_per_s=rate,
            poll_interval_s=poll_interval_s,
            world_size=world_size,
            window=window,
            can_record_memory=can_record_memory,
        ),
    )
