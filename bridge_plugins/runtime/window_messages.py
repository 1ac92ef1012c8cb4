"""What the controller tells the user about its profiling window: the steps it was asked to capture
against the steps it did capture.

Every message that a window was missed, entered late or closed early is here, so the controller's
lifecycle code reads as decisions and each message is worded once. Steps are shown inclusive
(``start``-``end-1``), as a user counts them.
"""

from __future__ import annotations

import logging

from bridge_plugins.config.profiling import ProfilingConfig

log = logging.getLogger("bridge_plugins")


def warn_never_reached(rank: int | None, cfg: ProfilingConfig, why: str) -> None:
    """The controller exits while its window is still armed: nothing was captured."""
    log.warning(
        "rank %s: the profiling window (steps %d-%d) was never reached: %s before step %d; "
        "nothing was captured by the profilers",
        rank,
        cfg.profile_step_start,
        cfg.profile_step_end - 1,
        why,
        cfg.profile_step_start,
    )


def warn_past_unopened_window(rank: int | None, step: int, cfg: ProfilingConfig) -> None:
    """The first step seen is already past the window (a resume past it, or skipped steps)."""
    log.warning(
        "rank %d: step %d is past the profiling window (steps %d-%d) that was never opened (a resume "
        "past it, or skipped steps): the profilers capture nothing; memory history, if on, is "
        "snapshotted now and stops",
        rank,
        step,
        cfg.profile_step_start,
        cfg.profile_step_end - 1,
    )


def warn_started_inside(rank: int | None, step: int, cfg: ProfilingConfig) -> None:
    """The first step seen is inside the window (a resumed run): only the rest is captured."""
    end = cfg.profile_step_end
    log.warning(
        "rank %d: the run starts at step %d, inside the profiling window (steps %d-%d): capturing steps %d-%d",
        rank,
        step,
        cfg.profile_step_start,
        end - 1,
        step,
        end - 1,
    )


def log_window_closed(
    rank: int | None, cfg: ProfilingConfig, reason: str | None, first: int | None, last: int | None
) -> None:
    """An info line for a window that ran to its end; a warning naming ``reason`` for an early close."""
    if reason is None:
        log.info("rank %d: profiling window closed: captured steps %d-%d", rank, first, last)
        return
    log.warning(
        "rank %d: profiling window steps %d-%d closed early (%s): captured steps %d-%d",
        rank,
        cfg.profile_step_start,
        cfg.profile_step_end - 1,
        reason,
        first,
        last,
    )
