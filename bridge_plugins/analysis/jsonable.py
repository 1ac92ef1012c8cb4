"""Analysis results as JSON: typed results (dataclasses) become objects, everything else as is.

Every ``--json`` output goes through ``dumps`` so the JSON is the typed result, field for field.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

OMIT_WHEN_NONE = "omit_when_none"
"""A dataclass field's metadata flag: the field is left out of the JSON where it is None (a key
only some entries have, as a trace's ``format`` and ``nsys``)."""


def jsonable(obj: object) -> Any:
    """``obj`` with dataclasses turned into dicts (but a field flagged ``OMIT_WHEN_NONE`` that is
    None) and NaN/inf into None (JSON has neither)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {
            f.name: jsonable(getattr(obj, f.name))
            for f in dataclasses.fields(obj)
            if not (f.metadata.get(OMIT_WHEN_NONE) and getattr(obj, f.name) is None)
        }
    if isinstance(obj, dict):
        return {k: jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def dumps(obj: object, indent: int | None = 1) -> str:
    return json.dumps(jsonable(obj), indent=indent)
