"""A split read's worker side (split.py): decode a chunk and gather it with a fresh Collector into
a part for the reading process to merge (merge.py), or say why that process must read the chunk
itself. A chunk arrives through the slots of shared memory mapped before the worker was forked,
or, when bigger than a slot, through the pool's pipe. A range worker instead reads the file
itself, gathers a part from the chunks in its range of bytes and one from each run of pieces it
claims after (:func:`collect_range`, range_runs.py), and sends them back through a memory file
where it can (part_file.py).
"""

from __future__ import annotations

import contextlib
import mmap
import os
from pathlib import Path
from typing import Any

import msgspec

from bridge_plugins.analysis.trace import chunked, collect, part_file, range_runs
from bridge_plugins.analysis.trace.collect import Collector, Record
from bridge_plugins.jobdir.regular_file import open_regular

SLOTS: mmap.mmap | None = None
"""The slots, set by the reading process before it forks the workers, so theirs too."""
_typed: Any = None  # the worker's decoder, built on its first chunk
_frozen: tuple[str, dict[str, int]] | None = None  # the worker's copy of the names file it was last given


def _frozen_ids(path: str) -> dict[str, int]:
    """The reading process's names (name -> id) from the file it wrote once they reached MAX_NAMES."""
    global _frozen
    if _frozen is None or _frozen[0] != path:
        with open(path, "rb") as fh:
            names = msgspec.msgpack.decode(fh.read(), type=list[str])
        _frozen = (path, {name: i for i, name in enumerate(names)})
    return _frozen[1]


def collect_chunk(chunk: bytes | memoryview, at: int, last: bool, names: str | None = None) -> tuple[str, Any]:
    """The worker's unit: what :func:`part_of` makes of the chunk's records (with the reading
    process's names from the file ``names``, once it has written one); ("here", None) when a value
    of an unexpected type sends the chunk to the dict path, which this process takes itself, as one
    pass would; ("cut", None) when the chunk must be cut again; ("error", one line)."""
    global _typed
    try:
        frozen = None if names is None else _frozen_ids(names)
    except (OSError, msgspec.DecodeError):  # gone or damaged: the part carries its names, as before
        frozen = None
    c, base = _part_collector(frozen)
    if not c.on_chunk(chunk):
        if _typed is None:
            _typed = chunked.typed_decoder(Record)
        try:
            typed_ok, records = chunked.decode_chunk(chunk, _typed, at, last)
        except chunked.Truncated:
            return "cut", None
        except chunked.Unreadable as e:
            return "error", str(e)
        if not typed_ok:
            return "here", None
        c.on_records(records)
    return _part(c, frozen, base)


def part_of(records: list, frozen: dict[str, int] | None = None) -> tuple[str, Any]:
    """("part", what a fresh :class:`Collector` gathers from a chunk's records), or ("here", None)
    for a chunk past a cap on its own, or with more events than SPILL_AT (a part holds no spill
    file: it could not cross to the reading process).

    ``frozen``: the reading process's names once they reached MAX_NAMES (no name is added after):
    the chunk's events then get their final ids here, and a name not among them its shared entry,
    as that process would give it. ("frozen", (the part, with only those shared entries in
    ``names``, and the id the first of them has)): no name crosses the pipe or is hashed twice."""
    c, base = _part_collector(frozen)
    c.on_records(records)
    return _part(c, frozen, base)


def _part_collector(frozen: dict[str, int] | None) -> tuple[Collector, int]:
    """A fresh collector for a part (with ``frozen``: see :func:`part_of`), and its first shared id."""
    c = Collector()
    base = 0
    if frozen is not None:
        base = len(frozen)
        c._ids = frozen  # full: the collector only reads it (Collector._id)
        c.data.names = [""] * base  # stand-ins: the shared entries made here get ids from base on
    return c, base


def _part(c: Collector, frozen: dict[str, int] | None, base: int) -> tuple[str, Any]:
    """What :func:`part_of` returns of the collector ``c``, once fed."""
    d = c.data
    if frozen is not None:
        d.names = d.names[base:]
    elif len(d.names) >= collect.MAX_NAMES:
        return "here", None
    if len(d.threads) >= collect.MAX_THREADS or len(d.steps) >= collect.MAX_STEPS:
        return "here", None
    if d.cpu_corr_spilled is not None or d.ops.spilled or d.py.spilled or d.annotations.spilled or d.runtime.spilled:
        return "here", None
    return ("part", d) if frozen is None else ("frozen", (d, base))


def collect_slot(offset: int, size: int, at: int, last: bool, names: str | None = None) -> tuple[str, Any]:
    """:func:`collect_chunk` of the chunk in the shared slots at ``offset``."""
    assert SLOTS is not None  # mapped before this worker was forked
    view = memoryview(SLOTS)[offset : offset + size]
    try:
        return collect_chunk(view, at, last, names)
    finally:
        view.release()


def file_identity(fh: Any) -> tuple[int, int, int, int]:
    """What tells an open file from another one at the same path: device, inode, size, mtime."""
    st = os.fstat(fh.fileno())
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def collect_range(
    path: str,
    lo: int,
    hi: int | None,
    total: int,
    identity: tuple,
    part_fd: int = -1,
    claims: range_runs.Claims | None = None,
    own: int = 0,
) -> tuple[str, Any]:
    """A range worker's unit: ("part", [(where each run starts, what a Collector that never spills
    gathers from it, its marks)]) for the reading process to merge (merge.py): its range, from
    ``lo`` to ``hi``, or with ``claims`` (every range's pieces) range ``own``'s first piece and then
    each piece it claims (range_runs.py); or ("shared", those runs as
    part_file.dumps wrote them to the memory file ``part_fd``); ("cut", None) where the file must be
    read in one process: another file at ``path`` than the one that process opened (``identity``),
    a cut inside a string, a file longer than ``total`` (so the ranges were wrong, and this part
    could hold most of it), a header the fast reader does not take, or a run past a cap on its
    own (its order would decide); ("error", one line). What reading the file raises otherwise (a
    truncated gzip stream, say) reaches the reading process as it is."""
    c = Collector()
    c.marks = {}
    try:
        with open_regular(Path(path)) as raw:
            if file_identity(raw) != tuple(identity):
                return "cut", None
            with range_runs.Streams(raw, path.endswith(".gz"), total) as streams:
                runs = range_runs.read_runs(streams, c, own, claims, lo, hi)
                if runs is None:
                    return "cut", None
    except chunked.NotFast:
        return "cut", None
    except chunked.Unreadable as e:
        return "error", str(e)
    for _, r in runs:
        d = r.data
        if (
            len(d.names) >= collect.MAX_NAMES
            or len(d.threads) >= collect.MAX_THREADS
            or len(d.steps) >= collect.MAX_STEPS
        ):
            return "cut", None
    parts = [(at, r.data, r.marks) for at, r in runs]
    if part_fd >= 0:
        with contextlib.suppress(OSError):  # a full memory: the pipe carries it
            return "shared", part_file.dumps(parts, part_fd)
    return "part", parts
