"""ProfilingConfig: the one object the launch side and the job side share.

The plugins write it into a recipe's ``ConfigContainer.profiling`` or into command-line
overrides; the controller reads it back. Standard library only, so both sides and OmegaConf's
structured configs can use it. Step ``i`` is the 0-based global index of a training iteration;
the window is ``profile_step_start <= i < profile_step_end``, both profilers capture exactly
those steps, and the memory snapshot is taken when the window ends.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bridge_plugins.config import foreign
from bridge_plugins.config.conflicts import exclusive_profilers_error

log = logging.getLogger("bridge_plugins")

DEFAULT_OUTPUT_DIR = "profiling"
"""Where artifacts go when output_dir is None and OUTPUT_DIR_ENV is unset (relative to the job's
working directory)."""
OUTPUT_DIR_ENV = "BRIDGE_PLUGINS_OUTPUT_DIR"
"""Environment variable a plugin sets on a run.Script's executor: the job directory as the job sees
it, used when output_dir is None. An env var rather than an override, because Megatron Bridge's
parser rejects a ``profiling.output_dir`` key, which its ProfilingConfig does not have."""


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
    profile_ranks: list[int] = field(default_factory=lambda: [0])
    """Global ranks that profile; [] means every rank, for every feature."""
    record_shapes: bool = False
    """Record operator input shapes: in the PyTorch trace, or in per-op NVTX ranges under nsys."""
    record_memory_history: bool = False
    """Record CUDA allocator history from start-up and write a snapshot per rank when the window ends."""
    memory_snapshot_path: str = "memory_snapshot.pickle"
    """Snapshot file; written as <stem>_<rank><suffix>. A relative path resolves under output_dir."""
    output_dir: str | None = None
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
    """Megatron Bridge's switch for NVTX ranges around model code (docs/megatron-bridge.md says what we do with it)."""
    on_demand: bool = False
    """Let `bridge-plugins trigger JOB_DIR` ask this running job to profile its next steps (no restart)."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> ProfilingConfig:
        """Check every field; raise TypeError or ValueError naming the field, the value and the fix.

        Also normalizes ``profile_ranks`` to a list (a tuple is accepted). Returns self so the
        plugins can write ``ProfilingConfig(**kw).validate()``.
        """
        validate_fields(dataclasses.asdict(self))
        self.profile_ranks = list(self.profile_ranks)
        normalize_paths(self, PATH_FIELDS)
        return self

    @classmethod
    def from_object(cls, obj: Any) -> ProfilingConfig:
        """Ours from a foreign profiling config: Megatron Bridge's (0.3.1 or main), Megatron-LM's, an
        OmegaConf node or a mapping of field values. Fields we share are copied; a field we do not
        support that holds a non-default value, or a shared field whose meaning differs, is named
        in a warning; nothing is dropped silently (see ``config.foreign``)."""
        if isinstance(obj, cls):
            return obj
        source = foreign.source_name(obj)
        shared = foreign.shared_values(obj, field_defaults())
        try:
            cfg = cls(**shared)
        except (TypeError, ValueError) as e:
            raise type(e)(f"from {source}: {e}") from None
        for message in foreign.meaning_differences(dataclasses.asdict(cfg), DEFAULT_OUTPUT_DIR):
            log.warning("%s: %s", source, message)
        return cfg

    @property
    def has_window(self) -> bool:
        """True when a configured window has work to do (a profiler or memory history)."""
        return self.use_nsys_profiler or self.use_pytorch_profiler or self.record_memory_history

    @property
    def enabled(self) -> bool:
        """True when any feature is on (a profiler, memory history, or on-demand requests)."""
        return self.has_window or self.on_demand

    def profiles_rank(self, rank: int) -> bool:
        """Whether ``rank`` is selected (``[]`` selects every rank)."""
        return not self.profile_ranks or rank in self.profile_ranks

    def window_steps(self) -> range:
        """The steps of the window, as a range."""
        return range(self.profile_step_start, self.profile_step_end)


def field_defaults() -> dict[str, Any]:
    """Every ProfilingConfig field with its default value (a fresh list for ``profile_ranks``)."""
    return {
        f.name: f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        for f in dataclasses.fields(ProfilingConfig)
    }


def _fields_of_type(kind: type) -> tuple[str, ...]:
    hints = typing.get_type_hints(ProfilingConfig)
    return tuple(f.name for f in dataclasses.fields(ProfilingConfig) if hints[f.name] is kind)


_BOOL_FIELDS = _fields_of_type(bool)
_INT_FIELDS = _fields_of_type(int)
PATH_FIELDS = ("output_dir", "memory_snapshot_path")


def is_int(value: Any) -> bool:
    """An int that is not a bool (``True`` is an int to Python, never a step or rank to us)."""
    return isinstance(value, int) and not isinstance(value, bool)


INT64_MAX = 2**63 - 1
"""The largest int a job may receive: torch, YAML readers and C++ profilers store them in 64 bits."""


def check_int64(value: int, label: str) -> None:
    """Raise ValueError, naming ``label``, for an int that does not fit in a signed 64-bit integer."""
    if not -INT64_MAX - 1 <= value <= INT64_MAX:
        raise ValueError(f"{label}={value} does not fit in a signed 64-bit integer (int64); use at most {INT64_MAX}")


def normalize_paths(obj: Any, names: tuple[str, ...]) -> None:
    """Replace each ``os.PathLike`` attribute in ``names`` by its str: fiddle cannot serialize a
    ``pathlib.Path`` and an override cannot carry one, so every path is a str from construction on."""
    for name in names:
        value = getattr(obj, name, None)
        if isinstance(value, os.PathLike):
            setattr(obj, name, os.fspath(value))


def _short(ranks: Any) -> str:
    """A rank list for a message: whole when short, else its head and length."""
    ranks = list(ranks)
    return repr(ranks) if len(ranks) <= 16 else f"[{', '.join(map(repr, ranks[:8]))}, ...] ({len(ranks)} ranks)"


def validate_fields(
    values: Mapping[str, Any], owner: str = "ProfilingConfig", names: Mapping[str, str] | None = None
) -> None:
    """Validate ProfilingConfig field values (missing keys take the defaults) without touching any disk.

    Shared by ProfilingConfig construction and the launch-side plugins, which validate before they
    touch an executor or a task. Errors name ``<owner>.<name>``, where ``names`` maps a config field
    to the caller's own name for it (a plugin's ``with_stack`` for ``pytorch_profiler_with_stack``).
    Whether a path exists, or is a directory, is checked where the job resolves it (the controller),
    never here: the driver's disk is not the job's.
    """
    names = names or {}

    def nm(name: str) -> str:
        return names.get(name, name)

    def full(name: str) -> str:
        return f"{owner}.{nm(name)}"

    defaults = field_defaults()
    unknown = sorted(set(values) - set(defaults))
    if unknown:
        raise TypeError(f"{owner} has no field(s) {unknown}; valid fields: {sorted(defaults)}")
    v = {**defaults, **values}

    for name in _BOOL_FIELDS:
        if not isinstance(v[name], bool):
            got = f"{v[name]!r} ({type(v[name]).__name__})"
            raise TypeError(f"{full(name)} must be a bool, got {got}; pass True or False")
    if exclusive_profilers_error(v, owner):
        raise ValueError(exclusive_profilers_error(v, owner))
    for name in _INT_FIELDS:
        if not is_int(v[name]):
            raise TypeError(f"{full(name)} must be an int, got {v[name]!r} ({type(v[name]).__name__})")
        check_int64(v[name], full(name))
    for name in ("profile_step_start", "profile_step_end"):
        if v[name] < 0:
            raise ValueError(
                f"{full(name)}={v[name]} is negative; steps are 0-based iteration indices, use a value >= 0"
            )
    start, end = v["profile_step_start"], v["profile_step_end"]
    if end <= start:
        raise ValueError(
            f"{full('profile_step_end')}={end} must be greater than {nm('profile_step_start')}={start}: "
            f"the window is start <= step < end, so set {nm('profile_step_end')} to at least {start + 1}"
        )
    if v["memory_history_max_entries"] <= 0:
        raise ValueError(
            f"{full('memory_history_max_entries')}={v['memory_history_max_entries']} must be positive (default 100000)"
        )
    _check_ranks(v["profile_ranks"], full("profile_ranks"))
    for name in PATH_FIELDS:
        _check_path(v[name], full(name), is_file=name == "memory_snapshot_path")


def _check_ranks(ranks: Any, label: str) -> None:
    if not isinstance(ranks, (list, tuple)):
        raise TypeError(
            f"{label} must be a list of global ranks, got {ranks!r} ({type(ranks).__name__}); "
            f"e.g. [0] or [0, 1], or [] for every rank"
        )
    for r in ranks:
        if not is_int(r):
            raise TypeError(f"{label}={_short(ranks)} holds {r!r} ({type(r).__name__}); ranks must be ints >= 0")
        if r < 0:
            raise ValueError(f"{label}={_short(ranks)} holds negative rank {r}; ranks are >= 0")
        check_int64(r, label)
    seen: set[int] = set()
    dupes: set[int] = set()
    for r in ranks:  # linear: one set lookup per rank
        (dupes if r in seen else seen).add(r)
    if dupes:
        raise ValueError(f"{label}={_short(ranks)} repeats rank(s) {_short(sorted(dupes))}; list each rank once")


def _check_path(path: Any, label: str, is_file: bool) -> None:
    """A path value the job can use: a str (or PathLike), not empty, no NUL, and for a file, a last
    component that is a file name. Whether a ``~user`` exists is a fact of the job's machine,
    checked there (``bridge_plugins.runtime.paths``), never here on the driver."""
    if path is None and not is_file:
        return
    if not isinstance(path, (str, os.PathLike)):
        kind = "a str path" if is_file else "a str path or None"
        raise TypeError(f"{label} must be {kind}, got {path!r} ({type(path).__name__})")
    path = os.fspath(path)
    example = "'memory_snapshot.pickle'" if is_file else "None for ./profiling, or a directory"
    if not path.strip():
        raise ValueError(f"{label} is empty; give {example}")
    if "\0" in path:
        raise ValueError(f"{label}={path!r} contains a NUL character, which no file system accepts; remove it")
    if is_file:
        last = path.rstrip("/")[path.rstrip("/").rfind("/") + 1 :]
        if path.endswith(("/", os.sep)) or last in ("", ".", "..") or (last.startswith("~") and "/" not in path):
            raise ValueError(
                f"{label}={path!r} names a directory; give a file inside it, "
                f"e.g. {os.path.join(path, 'memory_snapshot.pickle')!r}"
            )


def profiling_fields() -> list[str]:
    """Names of ProfilingConfig's fields, in declaration order."""
    return [f.name for f in dataclasses.fields(ProfilingConfig)]
