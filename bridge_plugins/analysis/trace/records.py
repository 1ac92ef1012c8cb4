"""What the fast reader decodes each event as: a complete event (``"ph": "X"``) with the fields the
collector reads, in the types it reads them, and an empty record for any other phase. A dict event
(the streaming reader's, or a chunk with a value of another type) is made the same
(:func:`event_from_dict`), so that one loop decides what is kept (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Union

import msgspec

_NUMBER = (int, float)
_NAN = float("nan")
_NOT_A_STRING = "\0(a category that is not a string)"  # what a dict event's odd ``cat`` becomes: no known one


class Args(msgspec.Struct, frozen=True, gc=False):
    """The ``args`` fields the collector reads (the fast reader decodes only these). -1 and NaN: absent.
    In the order Kineto writes them (msgspec finds a field faster where it expects it next)."""

    stream: int = -1
    correlation: int = -1
    bytes: float = _NAN  # memcpy/memset
    bandwidth: float = msgspec.field(default=_NAN, name="memory bandwidth (GB/s)")


_NO_ARGS = Args()


class Event(msgspec.Struct, gc=False, tag_field="ph", tag="X"):
    """A complete event (``"ph": "X"``), with the fields the collector reads, in the types it reads
    them (NaN: no number). The fast reader decodes them so (as :data:`Record`); a chunk with a value
    of another type arrives as dicts (see :func:`event_from_dict`)."""

    cat: str | None = None  # the fields in the order Kineto writes them, as in Args
    name: str = ""
    pid: int | str | None = None
    tid: int | str | None = None
    ts: float = _NAN
    dur: float = _NAN
    args: Args = _NO_ARGS


class Skipped(msgspec.Struct, gc=False, tag_field="ph"):
    """An event of another phase (flows, instants, metadata...): nothing of it is read, so msgspec
    builds none of its fields (a third of a Kineto trace's events are flow arrows)."""


_PHASES = "BEIiCbneSTpFstfPNODMVvRc()"  # the Chrome trace format's phases other than X
_SKIPPED_TYPES = tuple(type(f"Skipped_{ph}", (Skipped,), {}, tag=ph) for ph in _PHASES)
Record: Any = Union.__getitem__((Event, *_SKIPPED_TYPES))  # Union[Event, Skipped_B, ...], built at run time
"""What the fast reader decodes each event as (``ph`` picks the type); an event with another
``ph``, or none, sends its chunk to the dict path, which skips it."""
_SKIPPED = Skipped()


def _int(value: object, default: int = -1) -> int:
    try:
        return int(value)  # type: ignore[call-overload]  # anything JSON holds; what int() refuses is the default
    except (TypeError, ValueError):
        return default


def _float_or_nan(value: object) -> float:
    try:
        return float(value) if type(value) in _NUMBER else _NAN  # type: ignore[arg-type]  # int or float
    except OverflowError:
        return _NAN


def _hashable(value: object) -> Hashable:
    """A pid/tid as a dict key: Kineto writes ints or strings; a list or object from a hand-edited
    or foreign trace becomes its text rather than a TypeError."""
    return value if value is None or isinstance(value, (int, float, str)) else str(value)


def _int_or_none(value: object) -> int:
    """A correlation or stream as an int: -1 when absent, what ``int()`` makes of a number or a
    numeric string, else -1."""
    return -1 if value is None else value if type(value) is int else _int(value)


def event_from_dict(e: dict) -> Event | Skipped:
    """A dict event as an :class:`Event` (or :class:`Skipped` when its ``ph`` is not X) with the values the collector reads: a time that is not a
    number becomes NaN (the event is dropped), a name that is not a string its text, a
    correlation or stream in a string that number, a category that is not a string one that
    matches no known category."""
    if e.get("ph") != "X":
        return _SKIPPED
    ts, dur = _float_or_nan(e.get("ts")), _float_or_nan(e.get("dur"))
    cat = e.get("cat")
    if cat is not None and type(cat) is not str:
        cat = _NOT_A_STRING
    name = e.get("name")
    if type(name) is not str:
        name = "" if name is None else str(name)
    a, args = e.get("args"), _NO_ARGS
    if type(a) is dict:
        corr = _int_or_none(a.get("correlation"))
        stream = _int_or_none(a.get("stream")) if corr >= 0 else -1
        bw = a.get("memory bandwidth (GB/s)")
        args = Args(stream, corr, _float_or_nan(a.get("bytes")), _float_or_nan(bw))
    pid, tid = _hashable(e.get("pid")), _hashable(e.get("tid"))
    return Event(cat, name, pid, tid, ts, dur, args)  # type: ignore[arg-type]
