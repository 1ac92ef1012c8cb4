"""PyTorchProfilerPlugin: torch.profiler traces (and optionally memory snapshots) for a window."""

from __future__ import annotations

from dataclasses import dataclass

import nemo_run as run

from bridge_plugins.config import conflicts
from bridge_plugins.plugins import tasks
from bridge_plugins.plugins.base import ProfilerPlugin
from bridge_plugins.plugins.edits import apply, warn
from bridge_plugins.plugins.executor_traits import peek_launcher


@dataclass(kw_only=True)
class PyTorchProfilerPlugin(ProfilerPlugin):
    """Profile steps [profile_step_start, profile_step_end) of the selected ranks with torch.profiler.

    Nothing changes on the executor: the job (``profiling.use_pytorch_profiler``) writes
    ``<output_dir>/torch_profile/rank<R>_steps<A>-<B>.pt.trace.json.gz`` per selected rank and, with
    ``record_memory_history``, a memory snapshot per rank when the window ends. ``output_dir``
    defaults to the job directory as the job sees it.
    """

    record_memory_history: bool = False
    """Record CUDA allocator history from start-up; snapshot when the window ends."""
    memory_snapshot_path: str = "memory_snapshot.pickle"
    """Snapshot file, written as <stem>_<rank><suffix>; relative paths resolve under output_dir."""
    memory_history_max_entries: int = 100_000
    """Allocator events kept (ring buffer)."""
    with_stack: bool = False
    """Record Python stacks in the trace (larger traces; needed for flame graphs)."""
    profile_memory: bool = False
    """Record tensor allocations in the trace."""
    background_export: bool = True
    """Write the trace from a background thread so the rank rejoins its collectives at once."""

    _FLAG = conflicts.PYTORCH
    _RENAMED = {"with_stack": "pytorch_profiler_with_stack", "profile_memory": "pytorch_profiler_profile_memory"}

    def setup(self, task: run.Partial | run.Script, executor: run.Executor) -> None:
        owner = type(self).__name__
        tasks.check_task(owner, task)
        launcher = peek_launcher(executor)
        edit = self.plan_task(task, executor, launcher, launcher)
        if launcher is not None and conflicts.switched_off_by(self._FLAG, {conflicts.NSYS: launcher.nsys_profile}):
            warn(
                f"{owner}: the launcher still wraps the job in nsys, which records "
                f"nothing now that the job runs the PyTorch profiler instead"
            )
        apply([edit])
