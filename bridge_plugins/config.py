"""ProfilingConfig: the one object the launch side and the job side share.

The launch side (NeMo Run plugins) writes it into a recipe's ``ConfigContainer.profiling`` or
into command-line overrides; the job side (``ProfilingController``) reads it back. It imports
neither torch nor nemo_run so both sides, and OmegaConf's structured configs, can use it.

Step semantics: step ``i`` is the 0-based global index of a training iteration (``i``
iterations completed before it). The profiling window is ``profile_step_start <= i <
profile_step_end``; both profilers capture exactly those steps and the memory snapshot is
taken when the window ends.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, List, Optional

DEFAULT_OUTPUT_DIR = "profiling"
"""Where artifacts go when output_dir is None (relative to the job's working directory)."""

_BOOL_FIELDS = (
    "use_nsys_profiler",
    "use_pytorch_profiler",
    "record_shapes",
    "record_memory_history",
    "pytorch_profiler_with_stack",
    "pytorch_profiler_profile_memory",
    "nvtx_per_op",
    "background_export",
    "pytorch_profiler_collect_shapes",
    "pytorch_profiler_collect_callstack",
    "pytorch_profiler_collect_chakra",
    "nvtx_ranges",
    "on_demand",
)


@dataclass
class ProfilingConfig:
    """What to profile, on which steps and ranks, and where the artifacts go."""

    use_nsys_profiler: bool = False
    """Capture the window with Nsight Systems (cudaProfilerStart/Stop plus NVTX step ranges)."""
    use_pytorch_profiler: bool = False
    """Capture the window with torch.profiler and write one Chrome trace per rank."""
    profile_step_start: int = 10
    """First profiled step (0-based global iteration index, inclusive)."""
    profile_step_end: int = 12
    """First step after the window (exclusive); must be greater than profile_step_start."""
    profile_ranks: List[int] = field(default_factory=lambda: [0])
    """Global ranks that profile; [] means every rank, for every feature."""
    record_shapes: bool = False
    """Record operator input shapes: in the PyTorch trace, or in per-op NVTX ranges under nsys."""
    record_memory_history: bool = False
    """Record CUDA allocator history from start-up and write a snapshot per rank when the window ends."""
    memory_snapshot_path: str = "memory_snapshot.pickle"
    """Snapshot file; written as <stem>_<rank><suffix>. A relative path resolves under output_dir."""
    output_dir: Optional[str] = None
    """Directory for every artifact; None means ./profiling under the job's working directory."""
    pytorch_profiler_with_stack: bool = False
    """Record Python stacks in the PyTorch trace (larger traces; needed for flame graphs)."""
    pytorch_profiler_profile_memory: bool = False
    """Record tensor allocations in the PyTorch trace (traces grow a lot on GPU)."""
    nvtx_per_op: bool = False
    """Under nsys, also emit one NVTX range per autograd op (torch emit_nvtx); costly, off by default."""
    memory_history_max_entries: int = 100_000
    """How many allocator events the memory history keeps (a ring buffer)."""
    background_export: bool = True
    """Write PyTorch traces from a background thread, so a profiled rank rejoins its collectives at once."""
    pytorch_profiler_collect_shapes: bool = False
    """Megatron Bridge's name: operator shapes in the PyTorch trace (same effect as record_shapes there)."""
    pytorch_profiler_collect_callstack: bool = False
    """Megatron Bridge's name: Python stacks in the PyTorch trace (same as pytorch_profiler_with_stack)."""
    pytorch_profiler_collect_chakra: bool = False
    """Also write a Chakra execution trace per profiled rank, for the window's steps only."""
    nvtx_ranges: bool = False
    """Megatron Bridge's switch for NVTX ranges around model code (see README for what we do with it)."""
    on_demand: bool = False
    """Let `bridge-plugins trigger JOB_DIR` ask this running job to profile its next steps (no restart)."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> "ProfilingConfig":
        """Check every field; raise TypeError or ValueError naming the field, the value and the fix.

        Also normalizes ``profile_ranks`` to a list (a tuple is accepted). Returns self so the
        plugins can write ``ProfilingConfig(**kw).validate()``.
        """
        validate_fields(dataclasses.asdict(self))
        self.profile_ranks = list(self.profile_ranks)
        self.memory_snapshot_path = os.fspath(self.memory_snapshot_path)
        if self.output_dir is not None:
            self.output_dir = os.fspath(self.output_dir)
        return self

    @property
    def enabled(self) -> bool:
        """True when any feature is on (a profiler, memory history, or on-demand requests)."""
        return self.use_nsys_profiler or self.use_pytorch_profiler or self.record_memory_history or self.on_demand

    def profiles_rank(self, rank: int) -> bool:
        """Whether ``rank`` is selected (``[]`` selects every rank)."""
        return not self.profile_ranks or rank in self.profile_ranks

    def window_steps(self) -> range:
        """The steps of the window, as a range."""
        return range(self.profile_step_start, self.profile_step_end)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_fields(values: dict) -> None:
    """Validate a mapping of ProfilingConfig field values (missing keys take the defaults).

    Shared by ProfilingConfig construction and the launch-side plugins, which validate before
    they touch an executor or a task.
    """
    defaults = {f.name: (f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default)
                for f in dataclasses.fields(ProfilingConfig)}
    unknown = sorted(set(values) - set(defaults))
    if unknown:
        raise TypeError(f"ProfilingConfig has no field(s) {unknown}; valid fields: {sorted(defaults)}")
    v = {**defaults, **values}

    for name in _BOOL_FIELDS:
        if not isinstance(v[name], bool):
            raise TypeError(
                f"ProfilingConfig.{name} must be a bool, got {v[name]!r} ({type(v[name]).__name__}); "
                f"pass True or False"
            )
    if v["use_nsys_profiler"] and v["use_pytorch_profiler"]:
        raise ValueError(
            "ProfilingConfig.use_nsys_profiler and use_pytorch_profiler are both True; "
            "they are mutually exclusive: turn one of them off"
        )
    for name in ("profile_step_start", "profile_step_end", "memory_history_max_entries"):
        if not _is_int(v[name]):
            raise TypeError(f"ProfilingConfig.{name} must be an int, got {v[name]!r} ({type(v[name]).__name__})")
    for name in ("profile_step_start", "profile_step_end"):
        if v[name] < 0:
            raise ValueError(
                f"ProfilingConfig.{name}={v[name]} is negative; steps are 0-based iteration indices, use a value >= 0"
            )
    if v["profile_step_end"] <= v["profile_step_start"]:
        raise ValueError(
            f"ProfilingConfig.profile_step_end={v['profile_step_end']} must be greater than "
            f"profile_step_start={v['profile_step_start']}: the window is start <= step < end, "
            f"so set profile_step_end to at least {v['profile_step_start'] + 1}"
        )
    if v["memory_history_max_entries"] <= 0:
        raise ValueError(
            f"ProfilingConfig.memory_history_max_entries={v['memory_history_max_entries']} must be positive "
            f"(default 100000)"
        )

    ranks = v["profile_ranks"]
    if not isinstance(ranks, (list, tuple)):
        raise TypeError(
            f"ProfilingConfig.profile_ranks must be a list of global ranks, got {ranks!r} "
            f"({type(ranks).__name__}); e.g. [0] or [0, 1], or [] for every rank"
        )
    for r in ranks:
        if not _is_int(r):
            raise TypeError(
                f"ProfilingConfig.profile_ranks={list(ranks)!r} holds {r!r} ({type(r).__name__}); "
                f"ranks must be ints >= 0"
            )
        if r < 0:
            raise ValueError(f"ProfilingConfig.profile_ranks={list(ranks)!r} holds negative rank {r}; ranks are >= 0")
    dupes = sorted({r for r in ranks if list(ranks).count(r) > 1})
    if dupes:
        raise ValueError(f"ProfilingConfig.profile_ranks={list(ranks)!r} repeats rank(s) {dupes}; list each rank once")

    out = v["output_dir"]
    if out is not None:
        if not isinstance(out, (str, os.PathLike)):
            raise TypeError(f"ProfilingConfig.output_dir must be a str path or None, got {out!r} ({type(out).__name__})")
        if not os.fspath(out).strip():
            raise ValueError("ProfilingConfig.output_dir is empty; use None for ./profiling or give a directory")
        if os.path.isfile(out):
            raise ValueError(f"ProfilingConfig.output_dir={os.fspath(out)!r} is an existing file; give a directory")

    path = v["memory_snapshot_path"]
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"ProfilingConfig.memory_snapshot_path must be a str path, got {path!r} ({type(path).__name__})")
    path = os.fspath(path)
    if not path.strip():
        raise ValueError(
            "ProfilingConfig.memory_snapshot_path is empty; give a file name such as 'memory_snapshot.pickle'"
        )
    # resolved as the job resolves it: relative paths live under output_dir
    resolved = path if os.path.isabs(path) else os.path.join(os.fspath(v["output_dir"] or DEFAULT_OUTPUT_DIR), path)
    if path.endswith(("/", os.sep)) or os.path.isdir(resolved):
        raise ValueError(
            f"ProfilingConfig.memory_snapshot_path={path!r} names a directory; give a file inside it, "
            f"e.g. {os.path.join(path, 'memory_snapshot.pickle')!r}"
        )


def profiling_fields() -> List[str]:
    """Names of ProfilingConfig's fields, in declaration order."""
    return [f.name for f in dataclasses.fields(ProfilingConfig)]
