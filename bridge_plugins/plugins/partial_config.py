"""Writing into a run.Partial: find its ConfigContainer and replace one section of it.

The ConfigContainer is the ``config`` argument, or the one argument whose configured class has
a ``profiling`` field. A section is replaced by a new ``run.Config(<section class>, ...)``
holding the recipe's explicitly set fields with the plugin's on top. It must be a
``run.Config``, never a dataclass instance: an instance passes ``exp.add`` and then fails in
packaging (``UnserializableValueError``). Unset sections are detected through
``__arguments__``: reading an unset ``default_factory`` field of a fiddle config raises.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

import fiddle as fdl
import nemo_run as run

from bridge_plugins.plugins.edits import Edit, warn

PROFILING = "profiling"
FT = "ft"


def _configured_class(value: Any) -> type | None:
    if isinstance(value, fdl.Buildable) and isinstance(value.__fn_or_cls__, type):
        return value.__fn_or_cls__
    return None


def has_section(cls: type | None, section: str) -> bool:
    return cls is not None and dataclasses.is_dataclass(cls) and any(f.name == section for f in dataclasses.fields(cls))


def find_config_container(owner: str, task: run.Partial) -> fdl.Buildable:
    """The fiddle config of the task's ConfigContainer (any dataclass with a ``profiling`` field)."""
    args = task.__arguments__
    if "config" in args and has_section(_configured_class(args["config"]), PROFILING):
        return args["config"]
    found = [(k, v) for k, v in args.items() if has_section(_configured_class(v), PROFILING)]
    if len(found) == 1:
        return found[0][1]
    fn = getattr(task.__fn_or_cls__, "__qualname__", task.__fn_or_cls__)
    if not found:
        raise TypeError(
            f"{owner}: run.Partial({fn}) has no configured argument with a 'profiling' field "
            f"(arguments: {sorted(args)}); pass the ConfigContainer as run.Partial({fn}, config=...)"
        )
    raise TypeError(
        f"{owner}: run.Partial({fn}) has several arguments with a 'profiling' field "
        f"({sorted(k for k, _ in found)}); name the one to profile 'config'"
    )


def _section_class(container_cls: type, section: str, fallback: type | None) -> type | None:
    """The dataclass declared for ``section`` (Optional[...] unwrapped), else ``fallback``."""
    try:
        hint = typing.get_type_hints(container_cls).get(section)
    except Exception:  # unresolvable annotations: fall back to the default factory
        hint = None
    candidates = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    for c in candidates:
        if isinstance(c, type) and dataclasses.is_dataclass(c):
            return c
    field = next(f for f in dataclasses.fields(container_cls) if f.name == section)
    if isinstance(field.default_factory, type) and dataclasses.is_dataclass(field.default_factory):
        return field.default_factory
    return fallback


def _explicit_fields(value: Any) -> dict[str, Any]:
    """Fields a section sets explicitly: a fiddle config's arguments, or an instance's fields."""
    if value is None:
        return {}
    if isinstance(value, fdl.Buildable):
        return dict(value.__arguments__)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    raise TypeError(f"cannot read section {value!r}: expected a run.Config or a dataclass")


def read_section(container: fdl.Buildable, section: str) -> dict[str, Any]:
    """The explicitly set fields of ``container.<section>`` ({} when unset or None)."""
    if section not in container.__arguments__:
        return {}
    return _explicit_fields(container.__arguments__[section])


def plan_section(
    owner: str,
    container: fdl.Buildable,
    section: str,
    values: Mapping[str, Any],
    fallback: type | None = None,
    validate: Callable[[dict], None] | None = None,
    optional: frozenset = frozenset(),
) -> tuple[Edit, dict[str, Any]]:
    """Replace ``container.<section>`` by ``run.Config(cls, **(explicit fields | values))``.

    Values for fields the section class does not declare (a foreign ProfilingConfig, e.g.
    Megatron Bridge's) are dropped with a warning, silently for the ``optional`` ones (a plugin's
    own settings left at their defaults). Returns the edit and the merged fields.
    """
    cls = _section_class(container.__fn_or_cls__, section, fallback)
    if cls is None:
        raise TypeError(f"{owner}: cannot tell the class of {container.__fn_or_cls__.__name__}.{section}")
    known = {f.name for f in dataclasses.fields(cls)}
    dropped = sorted(k for k in values if k not in known and k not in optional)
    if dropped:
        warn(f"{owner}: {cls.__module__}.{cls.__qualname__} has no field(s) {dropped}; not set")
    merged = {**read_section(container, section), **{k: v for k, v in values.items() if k in known}}
    merged = {k: list(v) if isinstance(v, (list, tuple)) else v for k, v in merged.items()}
    if validate is not None:
        validate(merged)
    new = run.Config(cls, **merged)

    def edit() -> None:
        setattr(container, section, new)

    return edit, merged
