"""NsysPlugin: wrap the job in ``nsys profile`` and have the job capture exactly the window."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List

import nemo_run as run

from bridge_plugins.plugins import executors as ex
from bridge_plugins.plugins import tasks
from bridge_plugins.plugins.base import ProfilerPlugin, check_bool


@dataclass(kw_only=True)
class NsysPlugin(ProfilerPlugin):
    """Profile steps [profile_step_start, profile_step_end) of the selected ranks with Nsight Systems.

    The launcher wraps the job in nsys with ``--capture-range=cudaProfilerApi`` (NeMo Run's
    default), and the job (``profiling.use_nsys_profiler``) calls cudaProfilerStart/Stop around
    the window on the selected ranks. Reports land in the job directory, one file per process.
    Under ``run.FaultTolerance`` (ft_launcher) nsys is disabled with a warning.
    """

    nsys_trace: List[str] = field(default_factory=lambda: ["nvtx", "cuda"])
    """APIs to trace (nsys ``-t``)."""
    nsys_extra_args: List[str] = field(default_factory=list)
    """Extra nsys options; a flag given here replaces NeMo Run's default for the same flag."""
    nsys_gpu_metrics: bool = False
    """Sample GPU metrics on the nodes hosting profiled ranks (SlurmExecutor only; warns elsewhere)."""
    nvtx_per_op: bool = False
    """Also emit one NVTX range per autograd op (torch emit_nvtx); costly."""

    _FLAG = "use_nsys_profiler"
    _FIELDS = {"nvtx_per_op": "nvtx_per_op"}

    def __post_init__(self) -> None:
        owner = type(self).__name__
        trace = self.nsys_trace
        if not isinstance(trace, (list, tuple)) or not trace or not all(
                isinstance(t, str) and t and t.strip() == t and "," not in t and " " not in t for t in trace):
            raise ValueError(f"{owner}.nsys_trace={trace!r} must be a non-empty list of nsys trace names, "
                             f"e.g. ['nvtx', 'cuda']")
        self.nsys_trace = list(trace)
        ex.validate_nsys_extra_args(owner, self.nsys_extra_args)
        self.nsys_extra_args = list(self.nsys_extra_args)
        check_bool(owner, "nsys_gpu_metrics", self.nsys_gpu_metrics)
        super().__post_init__()

    def setup(self, task: run.Partial | run.Script, executor: run.Executor) -> None:
        tasks.check_task(self, task)
        if ex.is_fault_tolerant(executor):
            ex.warn("NsysPlugin: the executor runs ft_launcher (run.FaultTolerance); nsys profiling is "
                    "disabled because nsys cannot follow fault-tolerance restarts")
            return
        executor_edit, launcher = ex.plan_nsys(
            executor, trace=self.nsys_trace, extra_args=self.nsys_extra_args,
            gpu_metrics=self.nsys_gpu_metrics, profile_ranks=self.profile_ranks)
        tasks.apply([self.plan_task(task, executor, launcher), executor_edit])
