"""FaultTolerancePlugin: run the job under ft_launcher with in-job restarts and job retries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import nemo_run as run

from bridge_plugins import conflicts
from bridge_plugins.plugins import tasks
from bridge_plugins.plugins.edits import apply, warn
from bridge_plugins.plugins.executor_traits import peek_launcher
from bridge_plugins.plugins.ft_launcher import plan_fault_tolerance
from bridge_plugins.plugins.quoting import QuotingChain


def _check_count(owner: str, name: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{owner}.{name} must be an int, got {value!r} ({type(value).__name__})")
    if value < 0:
        raise ValueError(f"{owner}.{name}={value} is negative; use 0 to disable")


def _check_timeout(owner: str, name: str, value) -> None:
    if value is None:
        return
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"{owner}.{name} must be seconds (int or float) or None, got {value!r} "
                        f"({type(value).__name__})")
    if value <= 0:
        raise ValueError(f"{owner}.{name}={value} must be positive seconds, or None for ft_launcher's default")


@dataclass(kw_only=True)
class FaultTolerancePlugin(run.Plugin):
    """Install ``run.FaultTolerance`` (nvidia-resiliency-ext's ft_launcher) on the executor.

    Sets ``ft.enable_ft_package=True`` in the task. nsys cannot follow ft_launcher's restarts,
    so nsys profiling is switched off with a warning whichever order the plugins come in; the
    PyTorch profiler is unaffected.
    """

    num_in_job_restarts: int = 3
    """Restarts of the workers inside one allocation (ft_launcher ``--max-restarts``)."""
    num_job_retries_on_failure: int = 2
    """Times the scheduler resubmits a failed job (``executor.retries``)."""
    initial_rank_heartbeat_timeout: Optional[float] = 1800
    """Seconds to wait for a rank's first heartbeat (covers start-up and checkpoint loading)."""
    rank_heartbeat_timeout: Optional[float] = 300
    """Seconds between heartbeats before a rank counts as hung."""

    def __post_init__(self) -> None:
        owner = type(self).__name__
        _check_count(owner, "num_in_job_restarts", self.num_in_job_restarts)
        _check_count(owner, "num_job_retries_on_failure", self.num_job_retries_on_failure)
        _check_timeout(owner, "initial_rank_heartbeat_timeout", self.initial_rank_heartbeat_timeout)
        _check_timeout(owner, "rank_heartbeat_timeout", self.rank_heartbeat_timeout)

    def setup(self, task: run.Partial | run.Script, executor: run.Executor) -> None:
        owner = type(self).__name__
        tasks.check_task(owner, task)
        launcher_now = peek_launcher(executor)
        executor_edit, launcher_after, launcher_had_nsys = plan_fault_tolerance(
            executor,
            retries=self.num_job_retries_on_failure,
            max_restarts=self.num_in_job_restarts,
            initial_rank_heartbeat_timeout=self.initial_rank_heartbeat_timeout,
            rank_heartbeat_timeout=self.rank_heartbeat_timeout,
        )
        task_edits, task_had_nsys = tasks.plan_enable_ft(
            owner, task,
            QuotingChain.for_executor(executor, launcher_now, script_arg=True, owner=owner),
            QuotingChain.for_executor(executor, launcher_after, script_arg=True, owner=owner))
        if launcher_had_nsys or task_had_nsys:
            warn(f"{owner}: nsys profiling is disabled because the job now runs under ft_launcher: "
                 f"{conflicts.NSYS_UNDER_FT}")
        apply([executor_edit, *task_edits])
