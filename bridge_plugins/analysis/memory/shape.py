"""The shape a memory snapshot must have before the analysis reads it, with its limits.

A snapshot is input from anywhere, so every value the analysis reads is checked here, once,
with a message naming the file and the place (``device_traces[0][12].size is a str``): the
analysis code can then trust its input and never fails with a traceback. Values it does not
read are never looked at. The limits (``MAX_FRAMES``, ``MAX_STRING``, ``MIN_ENTRY_BYTES``, int64)
and why: docs/reliability.md ("Memory snapshots from anywhere").
"""

from __future__ import annotations

import math
from typing import Any

from bridge_plugins.config.errors import BridgePluginsError

MAX_FRAMES = 10_000
MAX_STRING = 1 << 16
MIN_ENTRY_BYTES = 16
_INT64 = 2**63


class ShapeError(BridgePluginsError, ValueError):
    """A value of the snapshot that the analysis cannot read; the message names where it is."""


def _kind(value: Any) -> str:
    name = "bool" if isinstance(value, bool) else type(value).__name__
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


def _int(value: Any, where: str, negative: bool = False) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ShapeError(f"{where} is {_kind(value)}, not an int")
    if not (-_INT64 if negative else 0) <= value < _INT64:
        raise ShapeError(f"{where} is out of range ({'an int64' if negative else '0 .. 2^63-1'} expected)")


def _time(value: Any, where: str) -> None:
    if value is None or (isinstance(value, float) and math.isfinite(value)):
        return
    if isinstance(value, float):
        raise ShapeError(f"{where} is {value}, not a finite number")
    _int(value, where, negative=True)


def _optional_int(d: dict, key: str, where: str, negative: bool = False) -> None:
    if d.get(key) is not None:
        _int(d[key], f"{where}.{key}", negative)


def _str(d: dict, key: str, where: str) -> None:
    value = d.get(key)
    if value is None:
        return
    if not isinstance(value, str):
        raise ShapeError(f"{where}.{key} is {_kind(value)}, not a str")
    if len(value) > MAX_STRING:
        raise ShapeError(f"{where}.{key} is {len(value):,} characters long (the limit is {MAX_STRING:,})")


def _list(value: Any, where: str) -> list:
    if not isinstance(value, list):
        raise ShapeError(f"{where} is {_kind(value)}, not a list")
    return value


def _dict(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise ShapeError(f"{where} is {_kind(value)}, not a dict")
    return value


class _Frames:
    """Checks frame lists, each distinct list once: torch shares one list among the entries of the
    same stack, and a crafted file can share one among millions."""

    def __init__(self) -> None:
        self.seen: set[int] = set()

    def check(self, owner: dict, where: str) -> None:
        frames = owner.get("frames")
        if frames is None or id(frames) in self.seen:
            return
        _list(frames, f"{where}.frames")
        if len(frames) > MAX_FRAMES:
            raise ShapeError(f"{where}.frames holds {len(frames):,} frames (the limit is {MAX_FRAMES:,})")
        for i, frame in enumerate(frames):
            at = f"{where}.frames[{i}]"
            _dict(frame, at)
            _str(frame, "filename", at)
            _str(frame, "name", at)
            _optional_int(frame, "line", at)
        self.seen.add(id(frames))


def check_snapshot(data: dict, file_size: int) -> None:
    """Raise ShapeError unless every value the analysis reads has the type and range it expects."""
    frames = _Frames()
    for s, seg in enumerate(_list(data.get("segments"), "segments")):
        where = f"segments[{s}]"
        _dict(seg, where)
        for key in ("device", "total_size", "stream"):
            _optional_int(seg, key, where)
        _optional_int(seg, "address", where)
        _str(seg, "segment_type", where)
        for b, blk in enumerate(_list(seg.get("blocks", []), f"{where}.blocks")):
            at = f"{where}.blocks[{b}]"
            _dict(blk, at)
            if "size" not in blk:
                raise ShapeError(f"{at} has no size")
            for key in ("size", "requested_size", "address"):
                _optional_int(blk, key, at)
            _str(blk, "state", at)
            _str(blk, "category", at)
            frames.check(blk, at)
    traces = _list(data.get("device_traces"), "device_traces")
    budget = max(1, file_size // MIN_ENTRY_BYTES)
    for d, entries in enumerate(traces):
        _list(entries, f"device_traces[{d}]")
        if len(entries) > budget:
            raise ShapeError(
                f"device_traces[{d}] holds {len(entries):,} entries in a file of {file_size:,} bytes: "
                f"a snapshot torch writes takes at least {MIN_ENTRY_BYTES} bytes per entry (the same entry repeated?)"
            )
        budget -= len(entries)
        for i, e in enumerate(entries):
            where = f"device_traces[{d}][{i}]"
            _dict(e, where)
            for key in ("size", "device_free"):
                _optional_int(e, key, where)
            _optional_int(e, "addr", where, negative=True)
            _str(e, "action", where)
            _str(e, "category", where)
            _time(e.get("time_us"), f"{where}.time_us")
            frames.check(e, where)
