"""An override's value text, checked against its field's type and written so YAML cannot change it.

OmegaConf reads a value as YAML 1.1, which silently turns ``/data/run #3`` into ``/data/run`` (a
comment), ``true`` into a bool for a str field, ``1:30`` into 90 (base 60), ``010`` into 8,
``2`` into True for a bool field and ``["0"]`` into ``[0]``. Here each value arrives as its field
declares, or is refused naming the key:

- str: a quoted value (``"..."`` as JSON, which the plugins write, or ``'...'``) is read as YAML
  and must be one whole scalar; ``null`` or ``~`` is None where the field allows it; anything
  else is the text itself, verbatim (``${...}`` interpolations still resolve).
- bool: ``true`` or ``false`` (any case). int: decimal digits, within int64. float: a finite
  decimal number. list[int]: ``[...]`` of decimal ints.
"""

from __future__ import annotations

import json
import math
import re
import types
import typing
from typing import Any

from bridge_plugins.config.profiling import INT64_MAX

_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_SINGLE_QUOTED = re.compile(r"'(?:[^']|'')*'")
_NULLS = ("null", "~")


class OverrideValueError(ValueError):
    """A value that its field's type does not admit; the message names the key."""


def field_type(section: type, name: str) -> Any:
    """The declared type of ``section.name`` (annotations resolved)."""
    return typing.get_type_hints(section)[name]


def typed_value(key: str, kind: Any, text: str) -> str:
    """``text`` rewritten as the YAML that OmegaConf reads back as the value of type ``kind``.

    Raises OverrideValueError naming ``key`` when ``text`` is not such a value. A type not
    listed in the module docstring is passed through for OmegaConf to check.
    """
    args = typing.get_args(kind)
    optional = isinstance(kind, types.UnionType) and type(None) in args
    base = next((a for a in args if a is not type(None)), kind) if optional else kind
    if optional and text.strip() in _NULLS:
        return "null"
    if base is str:
        return _str_value(key, text)
    if base is bool:
        if text.strip().lower() not in ("true", "false"):
            raise OverrideValueError(f"{key}={text!r} is not a valid bool: write true or false")
        return text.strip().lower()
    if base is int:
        return str(_int(key, text.strip(), text))
    if base is float:
        return repr(_float(key, text))
    if typing.get_origin(base) is list and typing.get_args(base) == (int,):
        stripped = text.strip()
        if not (stripped.startswith("[") and stripped.endswith("]")):
            raise OverrideValueError(f"{key}={text!r} is not a list of ints: write e.g. [0,1], or [] for none")
        items = [s.strip() for s in stripped[1:-1].split(",")] if stripped[1:-1].strip() else []
        if not all(_INT.fullmatch(s) for s in items):
            raise OverrideValueError(f"{key}={text!r} is not a list of ints: write decimal ints, e.g. [0,1]")
        return "[" + ",".join(str(_int(key, s, text)) for s in items) + "]"
    return text


def _int(key: str, digits: str, text: str) -> int:
    if not _INT.fullmatch(digits):
        raise OverrideValueError(f"{key}={text!r} is not an int: write decimal digits, e.g. {key}=10")
    value = int(digits, 10)
    if abs(value) > INT64_MAX:
        raise OverrideValueError(f"{key}={text!r} does not fit in a signed 64-bit integer (int64)")
    return value


def _float(key: str, text: str) -> float:
    if not _FLOAT.fullmatch(text.strip()):
        if text.strip().lower().lstrip("+-.") in ("inf", "nan", "infinity"):
            raise OverrideValueError(f"{key}={text!r} is not a finite number")
        raise OverrideValueError(f"{key}={text!r} is not a number: write e.g. {key}=0.001 or 1e-3")
    value = float(text)
    if not math.isfinite(value):
        raise OverrideValueError(f"{key}={text!r} is not a finite number")
    return value


def _str_value(key: str, text: str) -> str:
    if text.startswith('"'):
        try:
            json.loads(text)
        except json.JSONDecodeError:
            raise OverrideValueError(
                f"{key}={text!r}: a quoted value must be one whole quoted string (nothing after the closing quote)"
            ) from None
        return text
    if text.startswith("'") and len(text) > 1:
        if not _SINGLE_QUOTED.fullmatch(text):
            raise OverrideValueError(
                f"{key}={text!r}: a quoted value must be one whole quoted string (nothing after the closing quote)"
            )
        return text
    return json.dumps(text)  # read back verbatim as a YAML double-quoted scalar
