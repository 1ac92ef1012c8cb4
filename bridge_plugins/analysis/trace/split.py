"""One trace on several cores, byte-identical to one process: in byte ranges (read_ranges.py:
each process reads the file itself and collects the chunks that start in its range), or chunk by
chunk (:func:`read_split`: this process cuts, workers collect each chunk, a part that cannot be
merged exactly is read here). The parts are merged in file order (merge.py), names, threads and
spills as one pass makes them; what cannot be, makes the file be read again in one process.
Whether and which way: split_plan.py; docs/scale.md ("One big trace on every core").
"""

from __future__ import annotations

import contextlib
import mmap
import os
import tempfile
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, cast

import msgspec

from bridge_plugins.analysis.parallel import FORKS, file_size, start_pool, terminate
from bridge_plugins.analysis.trace import chunked, collect, read_ranges, split_plan, split_worker
from bridge_plugins.analysis.trace.collect import Collected, Collector, Record
from bridge_plugins.analysis.trace.cutting import blocks, chunks
from bridge_plugins.analysis.trace.header import header
from bridge_plugins.analysis.trace.merge import TABLES as TABLES
from bridge_plugins.analysis.trace.merge import merge
from bridge_plugins.analysis.trace.reader import named_errors, read_trace
from bridge_plugins.analysis.trace.split_worker import collect_chunk, collect_slot
from bridge_plugins.jobdir.regular_file import open_regular

if TYPE_CHECKING:  # imported when a pool runs: a one-process read never pays for them
    from concurrent.futures import Future, ProcessPoolExecutor

IN_FLIGHT_PER_WORKER = 3
"""Chunks (about 1 MB each) sent ahead per worker: enough to keep it busy while this process merges."""
SLOT_BYTES = 4 << 20
"""A chunk (a block of 1 MB or two, cut at an event) goes to its worker through a slot of this
size in memory mapped before the workers are forked, so theirs too: written once, decoded where it
lies. A bigger chunk (a huge event) goes through the pool's pipe."""
NAMES_FILE_MAX_CHARS = 8 << 20
"""Names longer than this in all are not given to the workers (each would hold a copy)."""


class _Split:
    """The chunks sent to the workers and not yet merged, in file order, and how each is settled."""

    def __init__(self, c: Collector, pool: ProcessPoolExecutor, window: int, slots: mmap.mmap | None) -> None:
        self.c, self.pool, self.window, self.slots = c, pool, window, slots
        self.typed = chunked.typed_decoder(Record)
        # (the future, the chunk: its bytes or (offset, size) in the slots, its offset in the file, last?)
        self.pending: deque[tuple[Future | None, bytes | tuple[int, int], int, bool]] = deque()
        self.sent = 0
        self.broken = False  # a worker died: the pool takes no more, this process reads the rest
        self.names: str | None = None  # the file of c's names, written once they are full (part_of)
        self.names_tried = False

    def publish_names(self) -> None:
        """Write ``c``'s names for the workers once they reached MAX_NAMES, so that the chunks sent
        from here on come back with their final ids (:func:`part_of`). A file that cannot be written
        (a full disk), or names too long to copy into every worker, change nothing but the speed."""
        self.names_tried = True
        names = self.c.data.names[: len(self.c._ids)]
        if sum(map(len, names)) > NAMES_FILE_MAX_CHARS:
            return
        try:
            fd, self.names = tempfile.mkstemp(prefix="bridge-plugins-names-")  # close() removes it
        except OSError:
            return
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(msgspec.msgpack.encode(names))
        except OSError:
            self.close()

    def close(self) -> None:
        """Remove the names file (one already gone is no error: the read's outcome stands)."""
        if self.names is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.names)
            self.names = None

    def add(self, chunk: bytes | bytearray | memoryview, at: int, last: bool) -> bool:
        """Send a chunk; settle the oldest ones while too many are out. False: read the file again."""
        from concurrent.futures.process import BrokenProcessPool

        data: bytes | tuple[int, int]
        if self.slots is not None and len(chunk) <= SLOT_BYTES:
            # the oldest of the `window` slots: its chunk was settled (at most window - 1 are out)
            offset = (self.sent % self.window) * SLOT_BYTES
            self.slots[offset : offset + len(chunk)] = chunk
            data = (offset, len(chunk))
        else:
            data = bytes(chunk)
        self.sent += 1
        if not self.names_tried and len(self.c._ids) >= collect.MAX_NAMES:
            self.publish_names()
        future = None
        if not self.broken:
            try:
                if isinstance(data, bytes):
                    future = self.pool.submit(collect_chunk, data, at, last, self.names)
                else:
                    future = self.pool.submit(collect_slot, *data, at, last, self.names)
            except BrokenProcessPool:
                self.broken = True
        self.pending.append((future, data, at, last))
        while len(self.pending) >= self.window:
            if not self.settle():
                return False
        return True

    def settle(self) -> bool:
        """Merge the oldest chunk's part, or read the chunk here. False: read the file again."""
        from concurrent.futures.process import BrokenProcessPool

        future, data, at, last = self.pending.popleft()
        kind, value = "here", None
        if future is not None:
            try:
                kind, value = future.result()
            except BrokenProcessPool:
                self.broken = True
        if kind == "part" and merge(self.c, cast(Collected, value)):
            return True
        if kind == "frozen" and merge(self.c, *cast(tuple[Collected, int], value)):
            return True
        if kind == "error":
            raise chunked.Unreadable(value)
        if kind == "cut":
            return False
        if isinstance(data, bytes):
            return self.read_here(data, at, last)
        assert self.slots is not None
        view = memoryview(self.slots)[data[0] : data[0] + data[1]]
        try:
            return self.read_here(view, at, last)
        finally:
            view.release()

    def read_here(self, data: bytes | memoryview, at: int, last: bool) -> bool:
        """The chunk, read in this process as :func:`chunked.read_events` reads it."""
        try:
            chunked.read_chunk(data, self.typed, at, last, self.c.on_event, self.c.on_records, self.c.on_chunk)
        except chunked.Truncated:
            return False
        return True


def read_split(
    fh: chunked.ByteStream, c: Collector, pool: ProcessPoolExecutor, window: int, slots: mmap.mmap | None = None
) -> bool:
    """Read ``fh`` into ``c`` with ``pool``, ``window`` chunks out at most (through ``slots``, if
    given: ``window`` x SLOT_BYTES mapped before the pool's workers were forked). False: read it
    again in one process (see the module doc). Raises what :func:`chunked.read_events` raises."""
    head, rest, offset = header(blocks(fh))
    c.on_header(head)
    split = _Split(c, pool, window, slots)
    try:
        try:
            for chunk, at, last in chunks(rest, offset, fh):
                if not split.add(chunk, at, last):
                    return False
        except Exception:
            # Unreadable past here, or the file's read failing: a single pass fails here too, unless
            # an earlier chunk had to be cut again (the file is then read again, and fails its way).
            while split.pending:
                if not split.settle():
                    return False
            raise
        while split.pending:
            if not split.settle():
                return False
        return True
    finally:
        split.close()


def collect_trace(path: Path, jobs: int = 1) -> Collected:
    """What :class:`Collector` gathers from the trace at ``path``, read by ``jobs`` processes
    (the same data as one): in ranges (read_ranges.py: started here, or ahead by the command)
    where split_plan.py says so, else chunk by chunk (:func:`read_split`).
    Raises TraceError as :func:`reader.read_trace` does."""
    path = Path(path)
    c = Collector()
    ranges = read_ranges.taken_over(path) if jobs > 1 else None
    if ranges is None:
        size = file_size(path)
        count, total = split_plan.plan_ranges(path, size, jobs)
        if count > 1:
            ranges = read_ranges.Ranges(path, count, total)
        else:
            workers = split_plan.plan(path, size, jobs)
            if workers > 1 and _read_split(path, c, workers):
                return c.data
    if ranges is not None and ranges.finish(c):
        return c.data
    read_trace(path, c.on_header, c.on_event, Record, c.on_records, c.on_chunk)  # on_header starts c afresh
    return c.data


def _read_split(path: Path, c: Collector, jobs: int) -> bool:
    """:func:`read_split` of the file, with a pool of ``jobs`` and its slots made and undone here."""
    window = IN_FLIGHT_PER_WORKER * jobs
    slots = mmap.mmap(-1, window * SLOT_BYTES) if FORKS else None  # shared; pages only as written
    split_worker.SLOTS = slots
    try:
        pool = start_pool(jobs)  # before the file opens: the gzip reader's thread is not forked
        try:
            with (
                named_errors(path),
                open_regular(path) as raw,
                chunked.open_stream(raw, path.name.endswith(".gz")) as fh,
            ):
                done = read_split(fh, c, pool, window, slots)
        except BaseException:
            terminate(pool)
            raise
        pool.shutdown(wait=True)
        return done
    finally:
        split_worker.SLOTS = None
        if slots is not None:
            slots.close()
