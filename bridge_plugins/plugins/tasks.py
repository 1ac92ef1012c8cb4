"""What a plugin writes into a task, for either task type: the profiling section, and FT's switch.

run.Partial tasks are written through ``partial_config``, run.Script tasks through
``script_overrides``; this module decides what to write and which rules apply
(``bridge_plugins.config.conflicts``). Every ``plan_*`` function validates and computes, then returns
edits, so a plugin can fail before it has changed anything.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import nemo_run as run

from bridge_plugins.config import conflicts
from bridge_plugins.config.profiling import OUTPUT_DIR_ENV, ProfilingConfig, field_defaults, validate_fields
from bridge_plugins.plugins import script_args
from bridge_plugins.plugins.edits import Edit, warn
from bridge_plugins.plugins.partial_config import (
    FT,
    PROFILING,
    find_config_container,
    has_section,
    plan_section,
    read_section,
)
from bridge_plugins.plugins.quoting import QuotingChain
from bridge_plugins.plugins.script_overrides import (
    checked_converter_output,
    default_script_args_converter,
    own_args,
    plan_script_args,
    reencoded,
    script_overrides,
    with_overrides,
)

SUPPORTED_TASKS = (run.Partial, run.Script)
PROFILING_FIELDS = frozenset(f.name for f in dataclasses.fields(ProfilingConfig))


def check_task(owner: str, task: object) -> None:
    """TypeError unless ``task`` is a run.Partial or a path-based run.Script."""
    if not isinstance(task, SUPPORTED_TASKS):
        raise TypeError(
            f"{owner} supports run.Partial and run.Script tasks, got {type(task).__module__}."
            f"{type(task).__qualname__} ({task!r:.80}); wrap a function as run.Partial(fn, config=...)"
        )
    if isinstance(task, run.Script) and task.inline:
        raise TypeError(
            f"{owner} cannot pass settings to an inline run.Script (NeMo Run ignores args for inline "
            f"scripts); use run.Script(path=..., args=[...])"
        )


def _existing_profiling(owner: str, task: run.Partial | run.Script, current: QuotingChain) -> dict[str, Any]:
    if isinstance(task, run.Partial):
        return read_section(find_config_container(owner, task), PROFILING)
    prefix = PROFILING + "."
    return {k[len(prefix) :]: v for k, v in script_overrides(task, current).items() if k.startswith(prefix)}


def default_script_args(values: Mapping[str, Any], existing: Mapping[str, Any]) -> list[str]:
    """What a profiler plugin sends to a run.Script by default: Megatron Bridge's keys, in its order
    and format, then each of our own keys the plugin holds at a value other than its default.

    A key that Megatron Bridge's ProfilingConfig lacks makes its parser reject the whole command
    line, so ours are sent only when asked for; the job's own defaults fill the rest. The other
    profiler's switch is sent (as ``false``) only when the task turned it on.
    """
    args = script_args.for_profiling(values)
    mb = script_args.default_converter_for(values)(args)
    sent = {a.partition("=")[0][len(PROFILING) + 1 :] for a in mb}
    defaults = field_defaults()
    extra = {
        k: v
        for k, v in values.items()
        if k not in sent and (v != defaults.get(k) or (k in conflicts.EXCLUSIVE_PROFILERS and existing.get(k) is True))
    }
    return mb + default_script_args_converter(extra)


def plan_profiling(
    owner: str,
    task: run.Partial | run.Script,
    values: Mapping[str, Any],
    *,
    flag: str,
    current: QuotingChain,
    target: QuotingChain,
    default_output_dir: str | None,
    converter: Callable[[Any], list[str]] | None = None,
    env: dict[str, str] | None = None,
    env_output_dir: str | None = None,
    route: Sequence[str] = (),
) -> Edit:
    """Write ``values`` (ProfilingConfig fields, with ``flag``'s profiler on) into the task.

    ``current``/``target``: how Script args are quoted now, and once the plugin's launcher edits
    are applied. ``output_dir`` falls back to ``default_output_dir`` (where the job sees its job
    dir) when neither the plugin nor the recipe/script set one. A profiler that ``flag``
    excludes is switched off with a warning.

    ``route``: the fixes the Script's argv needs on this executor (``plan_script_args``).
    For a run.Script that fallback travels as ``env[OUTPUT_DIR_ENV] = env_output_dir`` (the value
    encoded for the executor's environment), not as an override: see ``default_script_args``.
    """
    values = {**conflicts.profiler_switches(flag), **dict(values)}
    existing = _existing_profiling(owner, task, current)
    for other in conflicts.switched_off_by(flag, existing):
        warn(f"{owner}: the task had profiling.{other}=True; switched off (the two profilers are mutually exclusive)")
    if values.get("output_dir") is None:
        values.pop("output_dir", None)
    asked = dict(values)
    if "output_dir" not in values and existing.get("output_dir") is None and default_output_dir is not None:
        values["output_dir"] = default_output_dir

    if isinstance(task, run.Partial):

        def validate(merged: dict) -> None:
            try:
                validate_fields({k: v for k, v in merged.items() if k in PROFILING_FIELDS})
            except (TypeError, ValueError) as e:
                raise type(e)(
                    f"{owner}: the recipe's profiling config combined with the plugin is invalid: {e}"
                ) from None

        container = find_config_container(owner, task)
        defaults = field_defaults()
        own_at_default = {k for k, v in values.items() if k not in script_args.MB_PROFILING_KEYS and v == defaults[k]}
        optional = frozenset(own_at_default | ({"output_dir"} if "output_dir" not in asked else set()))
        return plan_section(
            owner, container, PROFILING, values, fallback=ProfilingConfig, validate=validate, optional=optional
        )[0]
    if converter:
        raw = checked_converter_output(owner, converter(script_args.for_profiling(values)))
    else:
        raw = default_script_args(asked, existing)
    args_edit = plan_script_args(
        task, with_overrides(owner, reencoded(owner, own_args(task), current, target, {}), raw, target), route
    )
    if env is None or env_output_dir is None or "output_dir" in asked or existing.get("output_dir") is not None:
        return args_edit

    def edit() -> None:
        args_edit()
        env[OUTPUT_DIR_ENV] = env_output_dir

    return edit


def plan_enable_ft(
    owner: str,
    task: run.Partial | run.Script,
    current: QuotingChain,
    target: QuotingChain,
    ft_values: Mapping[str, Any],
    ft_args: Sequence[str],
    route: Sequence[str] = (),
) -> tuple[list[Edit], bool]:
    """Write the ``ft`` section (``ft_values`` into a Partial's config; ``ft_args``, as given, into a
    Script) and switch ``profiling.use_nsys_profiler`` off.

    For a Script, the plugin-written args are first re-encoded for the new launcher (``route``:
    see ``plan_script_args``). Returns the edits and whether the task had nsys profiling on.
    """
    nsys_off = {conflicts.NSYS: conflicts.nsys_allowed(fault_tolerance=True)}
    if isinstance(task, run.Script):
        nsys_key = f"{PROFILING}.{conflicts.NSYS}"
        had_nsys = script_overrides(task, current).get(nsys_key) is True
        args = reencoded(owner, own_args(task), current, target, {nsys_key: nsys_off[conflicts.NSYS]})
        args = with_overrides(owner, args, list(ft_args), target)
        return [plan_script_args(task, args, route)], had_nsys
    container = find_config_container(owner, task)
    edits: list[Edit] = []
    if has_section(container.__fn_or_cls__, FT):
        edits.append(plan_section(owner, container, FT, ft_values)[0])
    else:
        warn(
            f"{owner}: {container.__fn_or_cls__.__name__} has no 'ft' section; "
            f"the job is not told that it runs under ft_launcher"
        )
    had_nsys = read_section(container, PROFILING).get(conflicts.NSYS) is True
    if had_nsys:
        edits.append(plan_section(owner, container, PROFILING, nsys_off, fallback=ProfilingConfig)[0])
    return edits, had_nsys
