"""How a value is written as a ``key=value`` override that the job's parser reads back unchanged.

Shared by the launch side (the plugins' default run.Script converter) and any job-side parser
that needs the rule. Imports neither torch, nemo_run nor omegaconf.
"""

from __future__ import annotations

import json
from typing import Any


def override_value(value: Any) -> str:
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
        return "[" + ",".join(override_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} ({type(value).__name__}) as an override")
