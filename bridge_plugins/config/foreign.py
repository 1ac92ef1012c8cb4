"""Read a foreign profiling config (Megatron Bridge's, Megatron-LM's) into our ProfilingConfig's fields.

Megatron Bridge users keep their ``ConfigContainer.profiling`` when they switch to our controller,
so nothing they set may vanish or quietly change meaning: shared fields are copied, any other set
field is named in a warning, and shared fields whose meaning differs are named too. The field by
field table: docs/formats.md. Imports nothing of ours (``ProfilingConfig.from_object`` calls it).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Iterable, Mapping
from typing import Any

log = logging.getLogger("bridge_plugins")


def source_name(obj: Any) -> str:
    """``module.Class`` of ``obj``, as warnings name it."""
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def _read(obj: Any) -> dict[str, Any]:
    """The object's fields and values: a dataclass, a mapping (OmegaConf DictConfig too), or attributes."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): obj[k] for k in obj}
    if hasattr(obj, "__dict__"):
        return dict(vars(obj))
    raise TypeError(
        f"cannot read a profiling config from {obj!r} ({source_name(obj)}); pass a dataclass, "
        f"a mapping of ProfilingConfig fields, or an object with those attributes"
    )


def _foreign_defaults(obj: Any) -> dict[str, Any]:
    if not (dataclasses.is_dataclass(obj) and not isinstance(obj, type)):
        return {}
    out = {}
    for f in dataclasses.fields(obj):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def _is_set(name: str, value: Any, defaults: Mapping[str, Any]) -> bool:
    """Whether a field we do not support holds something other than its default (falsy when unknown)."""
    if name in defaults:
        try:
            return bool(value != defaults[name])
        except Exception:  # values that do not compare cleanly count as set
            return True
    return bool(value)


def _plain(value: Any) -> Any:
    """A list for any non-string sequence (OmegaConf's ListConfig, tuples), else the value."""
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes, Mapping, os.PathLike)):
        return list(value)
    return value


def shared_values(obj: Any, ours: Mapping[str, Any]) -> dict[str, Any]:
    """``obj``'s values of the fields in ``ours`` (ProfilingConfig's defaults); every other field that
    holds a non-default value is named in a warning. TypeError when ``obj`` shares no field."""
    source = source_name(obj)
    values = _read(obj)
    shared = {k: _plain(v) for k, v in values.items() if k in ours}
    if not shared:
        raise TypeError(
            f"{source} has none of ProfilingConfig's fields (got {sorted(values)[:10]}); pass the "
            f"profiling section itself (e.g. cfg.profiling), not the whole config"
        )
    defaults = _foreign_defaults(obj)
    ignored = [k for k, v in values.items() if k not in ours and not k.startswith("_") and _is_set(k, v, defaults)]
    for name in ignored:
        log.warning("%s.%s=%r is not supported by bridge-plugins and is ignored", source, name, values[name])
    return shared


def meaning_differences(cfg: Mapping[str, Any], default_output_dir: str) -> list[str]:
    """Shared fields whose Megatron Bridge meaning differs from ours for these values (``cfg``: our
    config's fields; ``default_output_dir``: where artifacts go without ``output_dir``)."""
    out = []
    if cfg["record_memory_history"] and cfg["profile_ranks"] == []:
        out.append(
            "profile_ranks=[] records memory history on every rank here "
            "(Megatron Bridge records it on none); list the ranks to record"
        )
    snapshot = cfg["memory_snapshot_path"]
    if cfg["record_memory_history"] and not os.path.isabs(os.path.expanduser(snapshot)):
        where = os.path.join(cfg["output_dir"] or default_output_dir, snapshot)
        out.append(
            f"memory_snapshot_path={snapshot!r} is relative: snapshots go to {where!r} "
            f"(under output_dir; Megatron Bridge writes it under the working directory)"
        )
    if cfg["nvtx_ranges"] and not cfg["use_nsys_profiler"]:
        out.append("nvtx_ranges=True does nothing without use_nsys_profiler: NVTX ranges are seen only by nsys")
    return out
