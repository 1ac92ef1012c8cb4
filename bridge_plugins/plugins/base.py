"""What NsysPlugin and PyTorchProfilerPlugin share: the window fields, validation, the task write.

A plugin is a keyword-only dataclass (NeMo Run serializes it into the experiment, so every
field must be plain data or an importable function). Validation runs in ``__post_init__`` so a
bad value fails in the user's driver script at construction, not in a job hours later.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import nemo_run as run
from nemo_run.core.execution.launcher import Launcher

from bridge_plugins.config.profiling import PATH_FIELDS, normalize_paths, profiling_fields, validate_fields
from bridge_plugins.plugins import tasks
from bridge_plugins.plugins.edits import Edit
from bridge_plugins.plugins.executor_traits import argv_fixes, env_value, job_dir_seen_by_job
from bridge_plugins.plugins.quoting import QuotingChain


def check_bool(owner: str, name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{owner}.{name} must be a bool, got {value!r} ({type(value).__name__}); pass True or False")


def check_importable(owner: str, name: str, fn: Any) -> None:
    """NeMo Run saves plugins by reference; only module-level functions can be saved and reloaded."""
    if fn is None:
        return
    if not callable(fn):
        raise TypeError(f"{owner}.{name} must be a function, got {fn!r} ({type(fn).__name__})")
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    target = sys.modules.get(module) if module else None
    for part in (qualname or "<unknown>").split("."):
        target = getattr(target, part, None)
    if target is not fn:
        raise TypeError(
            f"{owner}.{name}={fn!r} cannot be saved with the experiment (NeMo Run stores functions by "
            f"import path); define it with 'def' at module level (no lambda, closure or functools.partial)"
        )


@dataclass(kw_only=True)
class ProfilerPlugin(run.Plugin):
    """Base of the profiler plugins: which steps and ranks, and how settings reach the job."""

    profile_step_start: int = 10
    """First profiled step (0-based global iteration index, inclusive)."""
    profile_step_end: int = 12
    """First step after the window (exclusive)."""
    profile_ranks: list[int] | None = None
    """Global ranks that profile; None means [0], [] means every rank."""
    record_shapes: bool = False
    """Record operator input shapes."""
    output_dir: str | None = None
    """Where the job writes artifacts; None means the NeMo Run job directory as the job sees it."""
    script_args_converter_fn: Callable[[dict[str, Any]], list[str]] | None = None
    """For run.Script tasks: turns ``{ProfilingConfig field: value}`` into the script's args
    (default: ``profiling.<field>=<yaml>`` overrides). Must be a module-level function."""

    _FLAG: ClassVar[str] = ""
    """The ProfilingConfig switch this plugin turns on (``bridge_plugins.config.conflicts`` turns off the rest)."""
    _RENAMED: ClassVar[dict[str, str]] = {}
    """Plugin field -> ProfilingConfig field, where the names differ. Every other plugin field
    named like a ProfilingConfig field is written under its own name."""

    def __post_init__(self) -> None:
        owner = type(self).__name__
        if self.profile_ranks is None:
            self.profile_ranks = [0]
        elif isinstance(self.profile_ranks, tuple):
            self.profile_ranks = list(self.profile_ranks)
        normalize_paths(self, PATH_FIELDS)
        validate_fields(self.profiling_values(), owner=owner, names={cfg: attr for attr, cfg in self._RENAMED.items()})
        check_importable(owner, "script_args_converter_fn", self.script_args_converter_fn)

    def profiling_values(self) -> dict[str, Any]:
        """The ProfilingConfig fields this plugin owns, with its values (derived from the dataclass)."""
        mine = {f.name: f.name for f in dataclasses.fields(self)}
        mine.update({cfg: attr for attr, cfg in self._RENAMED.items()})
        values = {name: getattr(self, mine[name]) for name in profiling_fields() if name in mine}  # config's order
        if isinstance(values.get("profile_ranks"), (list, tuple)):
            values["profile_ranks"] = list(values["profile_ranks"])
        return values

    def plan_task(
        self,
        task: run.Partial | run.Script,
        executor: run.Executor,
        launcher_now: Launcher | None,
        launcher_after: Launcher | None,
    ) -> Edit:
        """The edit that writes this plugin's settings into the task (validated, not applied).

        ``launcher_now``/``launcher_after``: the executor's launcher before and after the plugin's
        own executor edits (Script args already there are read with the first, new ones encoded
        for the second). None means no launcher.
        """
        owner = type(self).__name__
        job_dir = job_dir_seen_by_job(executor, owner)
        return tasks.plan_profiling(
            owner,
            task,
            self.profiling_values(),
            flag=self._FLAG,
            current=QuotingChain.for_executor(executor, launcher_now, script_arg=True, owner=owner),
            target=QuotingChain.for_executor(executor, launcher_after, script_arg=True, owner=owner),
            default_output_dir=job_dir,
            converter=self.script_args_converter_fn,
            env=executor.env_vars,
            env_output_dir=None if job_dir is None else env_value(executor, job_dir, owner),
            route=argv_fixes(executor, launcher_after),
        )
