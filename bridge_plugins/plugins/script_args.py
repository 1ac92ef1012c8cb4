"""Typed arguments for ``script_args_converter_fn``, with Megatron Bridge's class and field names.

Dataclasses with exactly Megatron Bridge's fields (``args.profile_step_start``), which are also
read-only mappings over every value the plugin writes (``args["nvtx_per_op"]``, ``dict(args)``),
so converters written for either keep working. ``profile_ranks`` may be ``[]`` (every rank), which
Megatron Bridge turns into ``[0]``. More: docs/formats.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any


class _ScriptArgs(Mapping):
    """Attribute access for Megatron Bridge's fields, mapping access for every value written."""

    _values: dict[str, Any]

    @classmethod
    def from_values(cls, values: Mapping[str, Any]):
        """Build from the full ``{field: value}`` map a plugin writes (it must hold the class's fields)."""
        own = {f.name: values[f.name] for f in dataclasses.fields(cls)}  # type: ignore[arg-type]  # subclasses are
        args = cls(**own)
        object.__setattr__(args, "_values", dict(values))
        return args

    def _mapping(self) -> dict[str, Any]:
        values = self.__dict__.get("_values")
        return values if values is not None else {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    def __getitem__(self, key: str) -> Any:
        return self._mapping()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._mapping())

    def __len__(self) -> int:
        return len(self._mapping())


@dataclass(eq=True)
class NsysPluginScriptArgs(_ScriptArgs):
    """What NsysPlugin passes to a converter (Megatron Bridge's fields)."""

    profile_step_start: int
    profile_step_end: int
    profile_ranks: list[int]
    record_shapes: bool


@dataclass(eq=True)
class PyTorchProfilerPluginScriptArgs(_ScriptArgs):
    """What PyTorchProfilerPlugin passes to a converter (Megatron Bridge's fields)."""

    profile_step_start: int
    profile_step_end: int
    profile_ranks: list[int]
    record_memory_history: bool
    memory_snapshot_path: str
    record_shapes: bool


@dataclass(eq=True)
class FaultTolerancePluginScriptArgs(_ScriptArgs):
    """What FaultTolerancePlugin passes to a converter (Megatron Bridge's fields)."""

    enable_ft_package: bool
    calc_ft_timeouts: bool


def for_profiling(values: Mapping[str, Any]) -> _ScriptArgs:
    """The typed arguments for a profiler plugin's values (which profiler is read from the values)."""
    cls = NsysPluginScriptArgs if values.get("use_nsys_profiler") else PyTorchProfilerPluginScriptArgs
    return cls.from_values(values)
