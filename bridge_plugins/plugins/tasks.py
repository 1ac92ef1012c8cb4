"""How the plugins write into a task: a run.Partial's ConfigContainer, or a run.Script's args.

run.Partial: the ConfigContainer is found (the ``config`` argument, or the one argument whose
configured class has a ``profiling`` field), and its ``profiling`` section is replaced by a new
``run.Config(<section class>, ...)`` holding the recipe's explicitly set fields with the plugin's
fields on top. It must be a ``run.Config``, never a dataclass instance: an instance passes
``exp.add`` and then fails in packaging (``UnserializableValueError``). Unset sections are detected
through ``__arguments__``: reading an unset ``default_factory`` field of a fiddle config raises.

run.Script: the plugin's values become Hydra/OmegaConf-style overrides
(``profiling.profile_ranks=[0,1]``; values in YAML flow syntax, strings JSON-double-quoted, which
YAML reads back verbatim), or whatever ``script_args_converter_fn`` returns. Each arg is then
encoded for the executor's delivery chain (``executors.arg_encoding``). Args the task already
has for the same keys are dropped first, so running ``setup`` again adds nothing.

Every ``plan_*`` function validates and computes, then returns an edit (a no-argument callable
that only assigns), so a plugin can fail before it has changed anything.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import fiddle as fdl
import nemo_run as run
import yaml

from bridge_plugins.config import ProfilingConfig, validate_fields
from bridge_plugins.plugins import executors as ex
from bridge_plugins.plugins import script_args

Edit = Callable[[], None]

SUPPORTED_TASKS = (run.Partial, run.Script)
PROFILING = "profiling"
FT = "ft"


def apply(edits: Iterable[Optional[Edit]]) -> None:
    """Run the edits of a plan, in order (only after everything was computed)."""
    for edit in edits:
        if edit is not None:
            edit()


def check_task(plugin: object, task: object) -> None:
    """TypeError unless ``task`` is a run.Partial or a path-based run.Script."""
    name = type(plugin).__name__
    if not isinstance(task, SUPPORTED_TASKS):
        raise TypeError(
            f"{name} supports run.Partial and run.Script tasks, got {type(task).__module__}."
            f"{type(task).__qualname__} ({task!r:.80}); wrap a function as run.Partial(fn, config=...)"
        )
    if isinstance(task, run.Script) and task.inline:
        raise TypeError(
            f"{name} cannot pass settings to an inline run.Script (NeMo Run ignores args for inline "
            f"scripts); use run.Script(path=..., args=[...])"
        )


# --------------------------------------------------------------------------------------------
# run.Partial
# --------------------------------------------------------------------------------------------


def _configured_class(value: Any) -> Optional[type]:
    if isinstance(value, fdl.Buildable) and isinstance(value.__fn_or_cls__, type):
        return value.__fn_or_cls__
    return None


def _has_section(cls: Optional[type], section: str) -> bool:
    return cls is not None and dataclasses.is_dataclass(cls) and any(
        f.name == section for f in dataclasses.fields(cls))


def find_config_container(plugin: object, task: run.Partial) -> fdl.Buildable:
    """The fiddle config of the task's ConfigContainer (any dataclass with a ``profiling`` field)."""
    args = task.__arguments__
    if "config" in args and _has_section(_configured_class(args["config"]), PROFILING):
        return args["config"]
    found = [(k, v) for k, v in args.items() if _has_section(_configured_class(v), PROFILING)]
    if len(found) == 1:
        return found[0][1]
    name = type(plugin).__name__
    fn = getattr(task.__fn_or_cls__, "__qualname__", task.__fn_or_cls__)
    if not found:
        raise TypeError(
            f"{name}: run.Partial({fn}) has no configured argument with a 'profiling' field "
            f"(arguments: {sorted(args)}); pass the ConfigContainer as run.Partial({fn}, config=...)"
        )
    raise TypeError(
        f"{name}: run.Partial({fn}) has several arguments with a 'profiling' field "
        f"({sorted(k for k, _ in found)}); name the one to profile 'config'"
    )


def _section_class(container_cls: type, section: str, fallback: Optional[type]) -> Optional[type]:
    """The dataclass declared for ``section`` (Optional[...] unwrapped), else ``fallback``."""
    try:
        hint = typing.get_type_hints(container_cls).get(section)
    except Exception:  # unresolvable annotations: fall back to the default factory
        hint = None
    candidates = typing.get_args(hint) if typing.get_origin(hint) is typing.Union else (hint,)
    for c in candidates:
        if isinstance(c, type) and dataclasses.is_dataclass(c):
            return c
    field = next(f for f in dataclasses.fields(container_cls) if f.name == section)
    if isinstance(field.default_factory, type) and dataclasses.is_dataclass(field.default_factory):
        return field.default_factory
    return fallback


def _explicit_fields(value: Any) -> Dict[str, Any]:
    """Fields a section sets explicitly: a fiddle config's arguments, or an instance's fields."""
    if value is None:
        return {}
    if isinstance(value, fdl.Buildable):
        return dict(value.__arguments__)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    raise TypeError(f"cannot read section {value!r}: expected a run.Config or a dataclass")


def read_section(container: fdl.Buildable, section: str) -> Dict[str, Any]:
    """The explicitly set fields of ``container.<section>`` ({} when unset or None)."""
    if section not in container.__arguments__:
        return {}
    return _explicit_fields(container.__arguments__[section])


def plan_section(owner: str, container: fdl.Buildable, section: str, values: Mapping[str, Any],
                 fallback: Optional[type] = None, validate: Optional[Callable[[dict], None]] = None
                 ) -> Tuple[Edit, Dict[str, Any]]:
    """Replace ``container.<section>`` by ``run.Config(cls, **(explicit fields | values))``.

    Values for fields the section class does not declare (a foreign ProfilingConfig, e.g.
    Megatron Bridge's) are dropped with a warning. Returns the edit and the merged fields.
    """
    cls = _section_class(container.__fn_or_cls__, section, fallback)
    if cls is None:
        raise TypeError(f"{owner}: cannot tell the class of {container.__fn_or_cls__.__name__}.{section}")
    known = {f.name for f in dataclasses.fields(cls)}
    dropped = sorted(k for k in values if k not in known)
    if dropped:
        ex.warn(f"{owner}: {cls.__module__}.{cls.__qualname__} has no field(s) {dropped}; not set")
    merged = {**read_section(container, section), **{k: v for k, v in values.items() if k in known}}
    merged = {k: list(v) if isinstance(v, (list, tuple)) else v for k, v in merged.items()}
    if validate is not None:
        validate(merged)
    new = run.Config(cls, **merged)

    def edit() -> None:
        setattr(container, section, new)

    return edit, merged


# --------------------------------------------------------------------------------------------
# run.Script
# --------------------------------------------------------------------------------------------


def yaml_value(value: Any) -> str:
    """A value in YAML flow syntax that OmegaConf's dotlist parser reads back unchanged."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a YAML double-quoted scalar
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(yaml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} ({type(value).__name__}) as an override")


def default_script_args_converter(values: Mapping[str, Any], section: str = PROFILING) -> List[str]:
    """``{'profile_ranks': [0, 1]}`` -> ``['profiling.profile_ranks=[0,1]']``."""
    return [f"{section}.{k}={yaml_value(v)}" for k, v in values.items()]


def _parse_override(arg: str) -> Optional[Tuple[str, Any]]:
    key, sep, value = arg.partition("=")
    if not sep:
        return None
    try:
        return key.strip(), yaml.safe_load(value)
    except yaml.YAMLError:
        return key.strip(), value


def script_overrides(task: run.Script, steps: Sequence[str]) -> Dict[str, Any]:
    """The task's existing ``key=value`` args, decoded for ``steps`` (later args win)."""
    out: Dict[str, Any] = {}
    for arg in task.args:
        try:
            parsed = _parse_override(ex.decode_arg(arg, steps))
        except ValueError:
            continue
        if parsed:
            out[parsed[0]] = parsed[1]
    return out


def with_overrides(owner: str, args: Sequence[str], raw_args: Sequence[str], steps: Sequence[str]) -> List[str]:
    """``args`` plus ``raw_args`` encoded with ``steps``, minus old args that set the same keys."""
    try:
        encoded = [ex.encode_arg(a, steps) for a in raw_args]
    except ValueError as e:
        raise ValueError(f"{owner}: {e}") from None
    keys = {p[0] for p in map(_parse_override, raw_args) if p}

    def replaced(arg: str) -> bool:
        if arg in encoded:
            return True
        try:
            parsed = _parse_override(ex.decode_arg(arg, steps))
        except ValueError:
            return False
        return bool(parsed) and parsed[0] in keys

    return [a for a in args if not replaced(a)] + encoded


def reencoded(owner: str, args: Sequence[str], old_steps: Sequence[str], new_steps: Sequence[str],
              replace: Mapping[str, Any]) -> List[str]:
    """``args`` with the plugin-written overrides re-encoded for a new delivery chain.

    A launcher change (FaultTolerancePlugin after a profiler plugin) changes how NeMo Run quotes
    Script args. Only args that decode as ``profiling.*=`` / ``ft.*=`` are touched; ``replace``
    overrides the values of keys that are present (e.g. nsys off).
    """
    out = []
    for arg in args:
        try:
            raw = ex.decode_arg(arg, old_steps)
            parsed = _parse_override(raw)
        except ValueError:
            parsed = None
        if not parsed or parsed[0].split(".", 1)[0] not in (PROFILING, FT):
            out.append(arg)
            continue
        if parsed[0] in replace:
            raw = f"{parsed[0]}={yaml_value(replace[parsed[0]])}"
        try:
            out.append(ex.encode_arg(raw, new_steps))
        except ValueError as e:
            raise ValueError(f"{owner}: {e}") from None
    return out


def plan_script_args(task: run.Script, new_args: List[str]) -> Edit:
    """Set the Script's args to ``new_args`` (computed beforehand)."""
    def edit() -> None:
        task.args = new_args

    return edit


# --------------------------------------------------------------------------------------------
# The profiling section, for either task type
# --------------------------------------------------------------------------------------------

_OTHER = {"use_nsys_profiler": "use_pytorch_profiler", "use_pytorch_profiler": "use_nsys_profiler"}


def plan_profiling(
    plugin: object,
    task: run.Partial | run.Script,
    executor: run.Executor,
    values: Mapping[str, Any],
    *,
    default_output_dir: Optional[str],
    converter: Optional[Callable[[Dict[str, Any]], List[str]]] = None,
    launcher=None,
) -> Edit:
    """Write ``values`` (ProfilingConfig fields) into the task.

    ``output_dir`` falls back to ``default_output_dir`` (where the job sees its job dir) when
    neither the plugin nor the recipe/script set one. If the task had the other profiler on, it
    is switched off with a warning (``values`` sets both flags).
    """
    owner = type(plugin).__name__
    values = dict(values)
    on = next(k for k in _OTHER if values.get(k))
    if isinstance(task, run.Partial):
        container = find_config_container(plugin, task)
        existing = read_section(container, PROFILING)
    else:
        existing = {k.split(".", 1)[1]: v for k, v in script_overrides(task, ex.arg_encoding(executor)).items()
                    if k.startswith(PROFILING + ".")}
    if existing.get(_OTHER[on]) is True:
        ex.warn(f"{owner}: the task had profiling.{_OTHER[on]}=True; switched off "
                f"(the two profilers are mutually exclusive)")
    if values.get("output_dir") is None:
        values.pop("output_dir", None)
        if existing.get("output_dir") is None and default_output_dir is not None:
            values["output_dir"] = default_output_dir

    if isinstance(task, run.Partial):
        def validate(merged: dict) -> None:
            try:
                validate_fields({k: v for k, v in merged.items() if k in _PROFILING_FIELDS})
            except (TypeError, ValueError) as e:
                raise type(e)(f"{owner}: the recipe's profiling config combined with the plugin is invalid: {e}") from None

        edit, _ = plan_section(owner, container, PROFILING, values, fallback=ProfilingConfig, validate=validate)
        return edit
    raw = converter(script_args.for_profiling(values)) if converter else default_script_args_converter(values)
    if not isinstance(raw, list) or not all(isinstance(a, str) for a in raw):
        raise TypeError(f"{owner}.script_args_converter_fn must return a list of str, got {raw!r}")
    steps = ex.arg_encoding(executor) if launcher is None else ex.arg_encoding(executor, launcher)
    return plan_script_args(task, with_overrides(owner, task.args, raw, steps))


_PROFILING_FIELDS = {f.name for f in dataclasses.fields(ProfilingConfig)}


def plan_enable_ft(plugin: object, task: run.Partial | run.Script, executor: run.Executor,
                   old_steps: Sequence[str], new_steps: Sequence[str], ft_values: Mapping[str, Any],
                   ft_args: Sequence[str]) -> Tuple[List[Edit], bool]:
    """Write the ``ft`` section (``ft_values``, or ``ft_args`` for a Script) and switch nsys off.

    For a Script, the plugin-written args are first re-encoded for the new launcher. Returns the
    edits and whether the task had nsys profiling on.
    """
    owner = type(plugin).__name__
    if isinstance(task, run.Script):
        nsys_key = f"{PROFILING}.use_nsys_profiler"
        had_nsys = script_overrides(task, old_steps).get(nsys_key) is True
        args = reencoded(owner, task.args, old_steps, new_steps, {nsys_key: False})
        args = with_overrides(owner, args, ft_args, new_steps)
        return [plan_script_args(task, args)], had_nsys
    container = find_config_container(plugin, task)
    edits: List[Edit] = []
    if _has_section(container.__fn_or_cls__, FT):
        edits.append(plan_section(owner, container, FT, ft_values)[0])
    else:
        ex.warn(f"{owner}: {container.__fn_or_cls__.__name__} has no 'ft' section; "
                f"the job is not told that it runs under ft_launcher")
    had_nsys = read_section(container, PROFILING).get("use_nsys_profiler") is True
    if had_nsys:
        edits.append(plan_section(owner, container, PROFILING, {"use_nsys_profiler": False},
                                  fallback=ProfilingConfig)[0])
    return edits, had_nsys
