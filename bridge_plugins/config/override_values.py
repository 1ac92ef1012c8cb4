"""How a value is written as a ``key=value`` override that the job's parser reads back unchanged.

The job parses overrides with OmegaConf: the value is read as YAML and ``${...}`` is an
interpolation. So a string is written as a JSON string (a YAML double-quoted scalar) whose
interpolations are escaped by OmegaConf's own rule (``\\${`` is a literal ``${``). More:
docs/formats.md. A plain word (``snapshot.pickle``; ``is_plain_word``) is written bare, as Megatron
Bridge's converters write it. Imports neither torch, nemo_run nor omegaconf: both sides can use it.
"""

from __future__ import annotations

import json
import re
from typing import Any

_INTERPOLATION = re.compile(r"(\\*)\$\{")
_WORD = re.compile(r"[A-Za-z0-9_./-]+")  # no ~: Hydra's grammar refuses it in a bare value
_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_/")
_NOT_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "none", "nan", "inf", "infinity"}


def is_plain_word(text: str) -> bool:
    """A string that YAML, OmegaConf and Hydra's override grammar all read back as itself, unquoted.

    It starts with a letter, ``_`` or ``/`` (YAML 1.1 reads ``.1_`` as 0.1, ``-`` as a list,
    ``...`` as a document end; anything led by a digit may be a number or a date somewhere) and is
    not a bool or null word.
    """
    return bool(_WORD.fullmatch(text)) and text[0] in _FIRST and text.lower() not in _NOT_WORDS


def escape_interpolations(text: str) -> str:
    """``text`` with every ``${`` escaped so that OmegaConf resolves it to ``text`` itself."""
    return _INTERPOLATION.sub(lambda m: m.group(1) * 2 + "\\${", text)


def override_value(value: Any) -> str:
    """A value in YAML flow syntax that OmegaConf's dotlist parser reads back unchanged."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        if is_plain_word(value):
            return value
        # a JSON string is a YAML double-quoted scalar; é stays é (Hydra's parser reads no \\u escapes)
        return json.dumps(escape_interpolations(value), ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(override_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} ({type(value).__name__}) as an override")
