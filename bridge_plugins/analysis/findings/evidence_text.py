"""A finding's evidence as readable lines, the same in the terminal and the report.

The evidence stays numbers in ``--json`` (microseconds, fractions); here each entry becomes one
``(label, text)`` pair: times in ms (a key ending ``_us``, or a table under such a key), shares and
``_vs_median`` fractions in %, bytes in MB, mappings as ``key: value`` pairs, lists of records as
``name (time, calls)``, and nothing cut inside a word (a long value ends at a word with "…").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

MAX_CHARS = 240  # per line, at most; longer values end at the last whole word
MAX_ITEMS = 5  # records or pairs shown per line; the rest are counted
_OURS = re.compile(r"^[a-z][a-z0-9_]*$")  # our snake_case field names; other keys (op names, kinds) show as they are


def _label(key: str) -> str:
    words = key.replace("_us_", "_").removesuffix("_us").removesuffix("_pct").replace("_", " ")
    return words.strip()


def _is_time(key: str) -> bool:
    return key.endswith("_us") or "_us_" in key


def _number(key: str, value: float) -> str:
    if _is_time(key):
        return f"{value / 1000:,.2f} ms" if abs(value) >= 1000 else f"{value / 1000:.3f} ms"
    if key.endswith("_pct"):
        return f"{value:.1f} %"
    if "share" in key or key.endswith("_vs_median"):
        return f"{100 * value:.1f} %"
    if key.startswith("bytes"):
        return f"{value / 1e6:,.1f} MB"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


def _child(key: str, k: object) -> str:
    """The key a mapping's value is read under: its own name, in its parent's unit when that is time."""
    if not (isinstance(k, str) and _OURS.match(k)):
        return key  # a step number, rank, operator or copy kind: the value is in the parent's unit
    return f"{k}_us" if _is_time(key) and not _is_time(k) else k


def _pair(key: str, k: object, v: object) -> str:
    name = _label(k) if isinstance(k, str) and _OURS.match(k) else str(k)
    text = _value(_child(key, k), v)
    return f"{name} ({text})" if isinstance(v, Mapping) else f"{name}: {text}"


def _value(key: str, value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, (int, float, Mapping, list, tuple)):
        return str(value)
    if isinstance(value, (int, float)):
        return _number(key, value)
    if isinstance(value, Mapping):
        pairs = list(value.items())
        shown = [_pair(key, k, v) for k, v in pairs[:MAX_ITEMS]]
        return ", ".join(shown) + (f" and {len(pairs) - MAX_ITEMS} more" if len(pairs) > MAX_ITEMS else "")
    return _sequence(key, value)


def _sequence(key: str, items: Sequence) -> str:
    if all(isinstance(x, Mapping) for x in items) and items:
        shown = [_record(x) for x in items[:MAX_ITEMS]]
    else:
        shown = [_value(key, x) for x in items[:MAX_ITEMS]]
    sep = "; " if any(isinstance(x, Mapping) for x in items) else ", "
    return sep.join(shown) + (f" and {len(items) - MAX_ITEMS} more" if len(items) > MAX_ITEMS else "")


def _record(r: Mapping) -> str:
    """A kernel, site or operator record: its name (or stack) first, then its figures."""
    head = r.get("name") or (" > ".join(r["stack"][-3:]) if isinstance(r.get("stack"), list) else None)
    rest = [f"{_label(k)} {_value(k, v)}" for k, v in r.items() if k not in ("name", "stack")]
    return f"{head} ({', '.join(rest)})" if head else ", ".join(rest)


def shorten(text: str, limit: int = MAX_CHARS) -> str:
    """``text`` cut at the last whole word before ``limit`` characters, with "…"."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;") + "…"


def evidence_lines(evidence: Mapping[str, object]) -> list[tuple[str, str]]:
    """(label, text) per evidence entry, in the finding's order."""
    return [(_label(k), shorten(_value(k, v))) for k, v in evidence.items()]
