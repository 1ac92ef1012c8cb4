"""FaultTolerancePlugin: run the job under ft_launcher with in-job restarts and job retries."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import nemo_run as run

from bridge_plugins.config import conflicts
from bridge_plugins.config.profiling import check_int64
from bridge_plugins.plugins import tasks
from bridge_plugins.plugins.base import check_bool, check_importable
from bridge_plugins.plugins.edits import apply, warn
from bridge_plugins.plugins.executor_traits import argv_fixes, peek_launcher
from bridge_plugins.plugins.ft_launcher import plan_fault_tolerance
from bridge_plugins.plugins.quoting import QuotingChain
from bridge_plugins.plugins.script_args import FaultTolerancePluginScriptArgs, _default_fault_tolerance_converter


def _check_count(owner: str, name: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{owner}.{name} must be an int, got {value!r} ({type(value).__name__})")
    if value < 0:
        raise ValueError(f"{owner}.{name}={value} is negative; use 0 to disable")
    check_int64(value, f"{owner}.{name}")


def _check_timeout(owner: str, name: str, value) -> None:
    if value is None:
        return
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(
            f"{owner}.{name} must be seconds (int or float) or None, got {value!r} ({type(value).__name__})"
        )
    if isinstance(value, int):
        check_int64(value, f"{owner}.{name}")
    elif not math.isfinite(value):
        raise ValueError(f"{owner}.{name}={value} is not a finite number of seconds; give positive seconds or None")
    if value <= 0:
        raise ValueError(f"{owner}.{name}={value} must be positive seconds, or None for ft_launcher's default")


@dataclass(kw_only=True)
class FaultTolerancePlugin(run.Plugin):
    """Install ``run.FaultTolerance`` (nvidia-resiliency-ext's ft_launcher) on the executor.

    Writes ``ft.enable_ft_package`` and ``ft.calc_ft_timeouts`` into the task, as Megatron
    Bridge's plugin of the same name does: ``ft.<field>=true|false`` overrides for a run.Script
    (or what ``script_args_converter_fn`` returns), the recipe's ``ft`` section for a run.Partial
    (a field the section lacks is reported and skipped). nsys cannot follow ft_launcher's restarts,
    so nsys profiling is switched off with a warning whichever order the plugins come in; the
    PyTorch profiler is unaffected.
    """

    enable_ft_package: bool = True
    """Tell the job to start the fault-tolerance package (heartbeats to ft_launcher's rank monitors)."""
    calc_ft_timeouts: bool = True
    """Let the fault-tolerance package compute the heartbeat timeouts from the observed iteration times."""
    num_in_job_restarts: int = 3
    """Restarts of the workers inside one allocation (ft_launcher ``--max-restarts``)."""
    num_job_retries_on_failure: int = 2
    """Times the scheduler resubmits a failed job (``executor.retries``)."""
    initial_rank_heartbeat_timeout: float | None = 1800
    """Seconds to wait for a rank's first heartbeat (covers start-up and checkpoint loading)."""
    rank_heartbeat_timeout: float | None = 300
    """Seconds between heartbeats before a rank counts as hung."""
    script_args_converter_fn: Callable[[FaultTolerancePluginScriptArgs], list[str]] | None = None
    """For run.Script tasks: turns ``FaultTolerancePluginScriptArgs`` into the script's args
    (default: ``ft.enable_ft_package=<bool> ft.calc_ft_timeouts=<bool>``). Module-level function."""

    def __post_init__(self) -> None:
        owner = type(self).__name__
        check_bool(owner, "enable_ft_package", self.enable_ft_package)
        check_bool(owner, "calc_ft_timeouts", self.calc_ft_timeouts)
        check_importable(owner, "script_args_converter_fn", self.script_args_converter_fn)
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
            owner,
            task,
            QuotingChain.for_executor(executor, launcher_now, script_arg=True, owner=owner),
            QuotingChain.for_executor(executor, launcher_after, script_arg=True, owner=owner),
            self.ft_values(),
            self.script_args() if isinstance(task, run.Script) else (),
            route=argv_fixes(executor, launcher_after),
        )
        if launcher_had_nsys or task_had_nsys:
            warn(
                f"{owner}: nsys profiling is disabled because the job now runs under ft_launcher: "
                f"{conflicts.NSYS_UNDER_FT}"
            )
        apply([executor_edit, *task_edits])

    def ft_values(self) -> dict:
        """The ``ft`` section fields this plugin sets."""
        return {"enable_ft_package": self.enable_ft_package, "calc_ft_timeouts": self.calc_ft_timeouts}

    def script_args(self) -> list[str]:
        """The run.Script args for the ``ft`` section (the converter's, or ``ft.<field>=<yaml>``)."""
        converter = self.script_args_converter_fn or _default_fault_tolerance_converter
        raw = converter(FaultTolerancePluginScriptArgs.from_values(self.ft_values()))
        return tasks.checked_converter_output(type(self).__name__, raw)
