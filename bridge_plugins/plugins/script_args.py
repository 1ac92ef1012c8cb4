"""Typed arguments for ``script_args_converter_fn``, with Megatron Bridge's class and field names.

Dataclasses with exactly Megatron Bridge's fields (``args.profile_step_start``), which are also
read-only mappings over every value the plugin writes (``args["nvtx_per_op"]``, ``dict(args)``),
so converters written for either keep working. ``profile_ranks`` may be ``[]`` (every rank), which
Megatron Bridge turns into ``[0]``. The ``_default_*_converter`` functions carry Megatron Bridge's names and write its keys in its order.
More: docs/formats.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from bridge_plugins.config.conflicts import NSYS as NSYS_SWITCH
from bridge_plugins.config.conflicts import PYTORCH as PYTORCH_SWITCH
from bridge_plugins.config.override_values import override_value


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
    cls = NsysPluginScriptArgs if values.get(NSYS_SWITCH) else PyTorchProfilerPluginScriptArgs
    return cls.from_values(values)


MB_PROFILING_KEYS = frozenset(
    [NSYS_SWITCH, PYTORCH_SWITCH]
    + [f.name for cls in (NsysPluginScriptArgs, PyTorchProfilerPluginScriptArgs) for f in dataclasses.fields(cls)]
)
"""The profiling keys Megatron Bridge's plugins send (every one is a field of its ProfilingConfig)."""


def _overrides(section: str, args: _ScriptArgs, keys: list[str], switch: str = "") -> list[str]:
    head = [f"{section}.{switch}=true"] if switch else []
    return head + [f"{section}.{k}={override_value(getattr(args, k))}" for k in keys]


def _default_nsys_converter(args: NsysPluginScriptArgs) -> list[str]:
    """Megatron Bridge's default for NsysPlugin: ``profiling.use_nsys_profiler=true`` and its fields."""
    return _overrides("profiling", args, [f.name for f in dataclasses.fields(NsysPluginScriptArgs)], NSYS_SWITCH)


def _default_pytorch_profiler_converter(args: PyTorchProfilerPluginScriptArgs) -> list[str]:
    """Megatron Bridge's default for PyTorchProfilerPlugin: ``profiling.use_pytorch_profiler=true`` and its fields."""
    fields = [f.name for f in dataclasses.fields(PyTorchProfilerPluginScriptArgs)]
    return _overrides("profiling", args, fields, PYTORCH_SWITCH)


def _default_fault_tolerance_converter(args: FaultTolerancePluginScriptArgs) -> list[str]:
    """Megatron Bridge's default for FaultTolerancePlugin: ``ft.enable_ft_package`` and ``ft.calc_ft_timeouts``."""
    return _overrides("ft", args, [f.name for f in dataclasses.fields(FaultTolerancePluginScriptArgs)])


def default_converter_for(values: Mapping[str, Any]):
    """The profiler plugin's default converter for ``values`` (which profiler is read from the values)."""
    return _default_nsys_converter if values.get(NSYS_SWITCH) else _default_pytorch_profiler_converter
