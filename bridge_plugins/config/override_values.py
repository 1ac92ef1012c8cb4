"""How a value is written as a ``key=value`` override that the job's parser reads back unchanged.

The job parses overrides with OmegaConf: the value is read as YAML and ``${...}`` is an
interpolation. So a string is written as a JSON string (a YAML double-quoted scalar) whose
interpolations are escaped by OmegaConf's own rule (``\\${`` is a literal ``${``). More:
docs/formats.md. Imports neither torch, nemo_run nor omegaconf: both sides can use it.
"""

from __future__ import annotations

import json
import re
from typing import Any

_INTERPOLATION = re.compile(r"(\\*)\$\{")


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
        return json.dumps(escape_interpolations(value))  # a JSON string is a YAML double-quoted scalar
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(override_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} ({type(value).__name__}) as an override")
