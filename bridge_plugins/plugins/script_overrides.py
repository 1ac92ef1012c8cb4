"""Writing into a run.Script: settings as ``section.key=value`` overrides, encoded per executor.

The plugin's values become Hydra/OmegaConf-style overrides (``profiling.profile_ranks=[0,1]``:
values in YAML flow syntax, strings as OmegaConf-escaped JSON strings that YAML and OmegaConf
read back verbatim, see ``bridge_plugins.config.override_values``), or whatever
``script_args_converter_fn`` returns. Each arg is then encoded with the executor's QuotingChain.
Args the task already has for the same keys are dropped first, so running ``setup`` again adds
nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import nemo_run as run
import yaml

from bridge_plugins.config.override_values import override_value
from bridge_plugins.plugins.edits import Edit
from bridge_plugins.plugins.partial_config import PROFILING
from bridge_plugins.plugins.quoting import QuotingChain


def default_script_args_converter(values: Mapping[str, Any], section: str = PROFILING) -> list[str]:
    """``{'profile_ranks': [0, 1]}`` -> ``['profiling.profile_ranks=[0,1]']``."""
    return [f"{section}.{k}={override_value(v)}" for k, v in values.items()]


def checked_converter_output(owner: str, raw: object) -> list[str]:
    """``raw`` (what a ``script_args_converter_fn`` returned), if it is a list of str; else TypeError."""
    if not isinstance(raw, list) or not all(isinstance(a, str) for a in raw):
        raise TypeError(f"{owner}.script_args_converter_fn must return a list of str, got {raw!r}")
    return raw


def _parse_override(arg: str) -> tuple[str, Any] | None:
    key, sep, value = arg.partition("=")
    if not sep:
        return None
    try:
        return key.strip(), yaml.safe_load(value)
    except yaml.YAMLError:
        return key.strip(), value


def script_overrides(task: run.Script, chain: QuotingChain) -> dict[str, Any]:
    """The task's existing ``key=value`` args, decoded with ``chain`` (later args win)."""
    out: dict[str, Any] = {}
    for arg in own_args(task):
        decoded = chain.decode_or_none(arg)
        parsed = _parse_override(decoded) if decoded is not None else None
        if parsed:
            out[parsed[0]] = parsed[1]
    return out


def _encode_all(owner: str, raw_args: Sequence[str], chain: QuotingChain) -> list[str]:
    try:
        return [chain.encode(a) for a in raw_args]
    except ValueError as e:
        raise ValueError(f"{owner}: {e}") from None


def with_overrides(owner: str, args: Sequence[str], raw_args: Sequence[str], chain: QuotingChain) -> list[str]:
    """``args`` plus ``raw_args`` encoded with ``chain``, minus old args that set the same keys."""
    encoded = _encode_all(owner, raw_args, chain)
    keys = {p[0] for p in map(_parse_override, raw_args) if p}

    def replaced(arg: str) -> bool:
        if arg in encoded:
            return True
        decoded = chain.decode_or_none(arg)
        parsed = _parse_override(decoded) if decoded is not None else None
        return parsed is not None and parsed[0] in keys

    return [a for a in args if not replaced(a)] + encoded


def reencoded(
    owner: str, args: Sequence[str], old: QuotingChain, new: QuotingChain, replace: Mapping[str, Any]
) -> list[str]:
    """``args`` re-encoded for a new chain, with ``replace`` overriding the values of keys present.

    A launcher change (nsys GPU metrics' ``bash -c`` level, FaultTolerancePlugin's launcher) changes
    how NeMo Run quotes Script args, for every arg the task has: the user's own and earlier
    plugins'. Each is decoded with the old chain and encoded with the new one; one that either
    chain cannot carry is refused by name rather than cut apart by the shell.
    """
    out = []
    for arg in args:
        raw = old.decode_or_none(arg)
        parsed = _parse_override(raw) if raw is not None else None
        if parsed and parsed[0] in replace:
            raw = f"{parsed[0]}={override_value(replace[parsed[0]])}"
        elif old == new:
            out.append(arg)
            continue
        if raw is None:
            raise ValueError(
                f"{owner}: the task's arg {arg!r} cannot be re-quoted for the new launcher (it is not "
                f"what NeMo Run's quoting on this executor produces); remove or simplify it"
            )
        out += _encode_all(owner, [raw], new)
    return out


UNQUOTE_ARGV = str(Path(__file__).resolve().parents[1] / "runtime" / "entry" / "unquote_argv.py")
"""The job-side file that undoes what NeMo Run does to a LocalExecutor job's argv (run by path)."""
ROUTE_OPTIONS = ("--quoted", "--nsys-postfix")
"""UNQUOTE_ARGV's options, in this order: see ``executor_traits.argv_fixes``."""


def split_route(task: run.Script) -> tuple[list[str] | None, list[str]]:
    """``(route head, the script's own args)``; the head is None when the task is not routed."""
    args = list(task.args)
    if task.path != UNQUOTE_ARGV:
        return None, args
    i = 0
    while i < len(args) and args[i] in ROUTE_OPTIONS:
        i += 1
    end = i + (2 if args[i : i + 1] == ["-m"] else 1)
    return args[:end], args[end:]


def own_args(task: run.Script) -> list[str]:
    """The script's own args, without a route's head."""
    return split_route(task)[1]


def plan_script_args(task: run.Script, new_args: list[str], route: Sequence[str] = ()) -> Edit:
    """Set the Script's own args to ``new_args`` (computed beforehand, from ``own_args``).

    ``route``: the fixes the job's argv needs (``executor_traits.argv_fixes``); when there are any,
    the job starts through ``UNQUOTE_ARGV``, which applies them: ``python -m M A`` becomes
    ``python unquote_argv.py --quoted -m M A``. A routed task is re-routed with the fixes of now
    (a later plugin may change the launcher), and un-routed when none are left. Python
    entrypoints only: a non-Python program is left as NeMo Run starts it.
    """

    def edit() -> None:
        head, _ = split_route(task)
        if head is not None:
            target = [a for a in head if a not in ROUTE_OPTIONS]
            task.path, task.m = (target[1], True) if target[0] == "-m" else (target[0], False)
        if route and task.entrypoint == "python":
            target = ["-m", task.path] if task.m else [task.path]
            task.path, task.m = UNQUOTE_ARGV, False
            task.args = [*route, *target, *new_args]
        else:
            task.args = list(new_args)

    return edit
