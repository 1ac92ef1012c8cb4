"""NsysPlugin: wrap the job in ``nsys profile`` and have the job capture exactly the window."""

from __future__ import annotations

from dataclasses import dataclass, field

import nemo_run as run

from bridge_plugins.config import conflicts
from bridge_plugins.plugins import tasks
from bridge_plugins.plugins.base import ProfilerPlugin, check_bool
from bridge_plugins.plugins.edits import apply, warn
from bridge_plugins.plugins.executor_traits import is_fault_tolerant, peek_launcher
from bridge_plugins.plugins.nsys_launcher import plan_nsys, validate_nsys_extra_args, validate_nsys_trace

DEFAULT_NSYS_TRACE = ("nvtx", "cuda")
"""What nsys traces when ``nsys_trace`` is None (Megatron Bridge's default)."""


@dataclass(kw_only=True)
class NsysPlugin(ProfilerPlugin):
    """Profile steps [profile_step_start, profile_step_end) of the selected ranks with Nsight Systems.

    The launcher wraps the job in nsys with ``--capture-range=cudaProfilerApi`` (NeMo Run's
    default), and the job (``profiling.use_nsys_profiler``) calls cudaProfilerStart/Stop around
    the window on the selected ranks. Reports land in the job directory, one file per process.
    Under ``run.FaultTolerance`` (ft_launcher) nsys is disabled with a warning.
    """

    nsys_trace: list[str] | None = None
    """APIs to trace (nsys ``-t``); None means ``DEFAULT_NSYS_TRACE``, as in Megatron Bridge."""
    nsys_extra_args: list[str] = field(default_factory=list)
    """Extra nsys options; a flag given here replaces NeMo Run's default for the same flag.
    Quoted for the executor's shell; control characters (a newline) are refused."""
    nsys_gpu_metrics: bool = False
    """Sample GPU metrics on the nodes hosting profiled ranks (SlurmExecutor only; warns elsewhere)."""
    nvtx_per_op: bool = False
    """Also emit one NVTX range per autograd op (torch emit_nvtx); costly."""

    _FLAG = conflicts.NSYS

    def __post_init__(self) -> None:
        owner = type(self).__name__
        if self.nsys_trace is not None:
            validate_nsys_trace(owner, self.nsys_trace)
            self.nsys_trace = list(self.nsys_trace)
        validate_nsys_extra_args(owner, self.nsys_extra_args)
        self.nsys_extra_args = list(self.nsys_extra_args)
        check_bool(owner, "nsys_gpu_metrics", self.nsys_gpu_metrics)
        super().__post_init__()

    def setup(self, task: run.Partial | run.Script, executor: run.Executor) -> None:
        owner = type(self).__name__
        tasks.check_task(owner, task)
        launcher_now = peek_launcher(executor)
        if not conflicts.nsys_allowed(fault_tolerance=is_fault_tolerant(launcher_now)):
            warn(
                f"{owner}: the executor runs ft_launcher (run.FaultTolerance); nsys profiling is disabled: "
                f"{conflicts.NSYS_UNDER_FT}"
            )
            return
        executor_edit, launcher_after = plan_nsys(
            owner,
            executor,
            trace=DEFAULT_NSYS_TRACE if self.nsys_trace is None else self.nsys_trace,
            extra_args=self.nsys_extra_args,
            gpu_metrics=self.nsys_gpu_metrics,
            profile_ranks=self.profile_ranks if self.profile_ranks is not None else [0],
        )
        apply([self.plan_task(task, executor, launcher_now, launcher_after), executor_edit])
