"""Hydra-style dotted overrides (``profiling.use_pytorch_profiler=true``) for ConfigContainer.

Parsing is OmegaConf's: the default ConfigContainer becomes a structured config, each
``key=value`` is merged with ``merge_with_dotlist`` (values are read as YAML, so ``true``,
``[0,1]``, ``null`` and ``"a quoted string"`` work), and ``OmegaConf.to_object`` builds the
dataclasses, which runs ``ProfilingConfig.validate``. Everything fails before training starts.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import shlex
import textwrap
from collections.abc import Iterable

import yaml
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from bridge_plugins.cli.suggest import closest
from recipes.config import ConfigContainer
from recipes.override_types import OverrideValueError, field_type, typed_value


class OverrideError(ValueError):
    """A command-line override that names no field or holds a bad value."""


def valid_keys(cls=ConfigContainer, prefix: str = "") -> list[str]:
    """Every dotted key that an override may set, e.g. ``train.train_iters``."""
    keys = []
    for f in dataclasses.fields(cls):
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if dataclasses.is_dataclass(default):
            keys += valid_keys(type(default), f"{prefix}{f.name}.")
        else:
            keys.append(f"{prefix}{f.name}")
    return keys


def _field_docs(cls) -> dict[str, str]:
    """The docstring under each field of a dataclass (the string literal that follows it)."""
    try:
        body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    except (OSError, TypeError, IndexError):
        return {}
    docs = {}
    for node, after in zip(body, body[1:], strict=False):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and (
                isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            )
        ):
            docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def _key_rows(cls, prefix: str = "") -> list[tuple[str, str, str, str]]:
    """(key, type, default, the field's docstring) for every dotted key, in field order."""
    rows = []
    docs = _field_docs(cls)
    for f in dataclasses.fields(cls):
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if dataclasses.is_dataclass(default):
            rows += _key_rows(type(default), f"{prefix}{f.name}.")
            continue
        kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
        rows.append((prefix + f.name, kind, f"default {default!r}", docs.get(f.name, "")))
    return rows


def describe_keys(cls=ConfigContainer) -> list[str]:
    """One line per key for ``--help``: key, type, default and docstring, in columns as wide as their widest."""
    rows = _key_rows(cls)
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return [
        " ".join(cell.ljust(width) for cell, width in zip(row, widths + [0], strict=False)).rstrip() for row in rows
    ]


def _keys_help() -> str:
    return "valid keys:\n  " + "\n  ".join(valid_keys())


def _unknown_key_help(key: str) -> str:
    """The closest keys ("did you mean"); else the keys of the section named, else every key."""
    keys = valid_keys()
    section, _, name = key.rpartition(".")
    in_section = [k for k in keys if k.rpartition(".")[0] == section]
    if in_section:  # a known section: compare the field names only (the shared prefix would make any key close)
        meant = [f"{section}.{n}" for n in closest(name, [k.rpartition(".")[2] for k in in_section])]
    else:
        meant = closest(key, keys)
    listing = "python -m recipes.train --help lists every key with its type"
    if meant:
        return f"did you mean {' or '.join(map(repr, meant))}? ({listing})"
    if in_section:
        return f"keys of {section}:\n  " + "\n  ".join(in_section) + f"\n({listing})"
    return _keys_help()


def _unquote(arg: str) -> str:
    """Undo one layer of shell quoting that reached us literally.

    NeMo Run shell-quotes run.Script arguments for torchrun and ft_launcher, but LocalExecutor
    starts the process without a shell, so the job receives ``'profiling.profile_ranks=[0,1]'``
    quotes and all. A real override starts with its key, never with a quote, so an argument that
    starts with one and is a single shell word is unquoted.
    """
    if arg[:1] not in ("'", '"'):
        return arg
    try:
        words = shlex.split(arg)
    except ValueError:
        return arg
    return words[0] if len(words) == 1 else arg


def _key_type(key: str, cls=ConfigContainer):
    """The declared type of a dotted key, e.g. ``int`` for ``train.train_iters``."""
    *sections, name = key.split(".")
    for section in sections:
        cls = field_type(cls, section)
    return field_type(cls, name)


def parse_overrides(args: Iterable[str], base: ConfigContainer | None = None) -> ConfigContainer:
    """Apply ``key=value`` overrides to ``base`` (default: a fresh ConfigContainer).

    Empty arguments are ignored: NeMo Run's local launcher appends a literal ``''`` to the
    command line when nsys is on. Arguments that arrive still shell-quoted are unquoted once.
    """
    conf = OmegaConf.structured(base if base is not None else ConfigContainer())
    keys = set(valid_keys())
    for arg in args:
        if not arg.strip():
            continue
        arg = _unquote(arg)
        if "=" not in arg:
            raise OverrideError(f"override {arg!r} is not of the form key=value; {_keys_help()}")
        key, value = arg.split("=", 1)
        key = key.strip()
        if key not in keys:
            raise OverrideError(f"unknown override key {key!r} (in {arg!r}); {_unknown_key_help(key)}")
        try:
            value = typed_value(key, _key_type(key), value)
        except OverrideValueError as e:
            raise OverrideError(f"bad value in override {arg!r}: {e}") from None
        try:
            conf.merge_with_dotlist([f"{key}={value}"])
        except OmegaConfBaseException as e:
            msg = str(e).splitlines()[0]
            raise OverrideError(f"bad value in override {arg!r}: {msg}") from None
        except yaml.YAMLError as e:  # the value is read as YAML: '[unclosed', '*alias', '%'
            msg = " ".join(str(e).split())
            raise OverrideError(
                f"bad value in override {arg!r}: not valid YAML ({msg}); quote it to pass it as a string: "
                f"{key}='\"{value}\"'"
            ) from None
    try:
        return OmegaConf.to_object(conf)
    except OmegaConfBaseException as e:
        cause = e.__cause__ or e
        raise OverrideError(f"invalid configuration: {str(cause).splitlines()[0]}") from None
    except (TypeError, ValueError) as e:
        raise OverrideError(f"invalid configuration: {e}") from None
