"""One trace on several cores: this process cuts the file into chunks (chunked.py), worker processes
decode and collect each chunk, and their parts are merged here in file order, registering names and
threads and spilling as one pass does, so every figure is byte-identical to one process's. Where
a part cannot be merged exactly (past a cap, odd values, a dead worker) this process reads that
chunk itself; only a cut inside a string rereads the file in one process (``read_split`` returns
False). How and when: docs/scale.md ("One big trace on every core"), docs/architecture.md.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import tempfile
from array import array
from collections import deque
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import msgspec
import numpy as np

from bridge_plugins.analysis.parallel import FORKS, file_size, start_pool, terminate
from bridge_plugins.analysis.trace import chunked, collect
from bridge_plugins.analysis.trace.collect import Collected, Collector, Record
from bridge_plugins.analysis.trace.reader import named_errors, read_trace
from bridge_plugins.analysis.trace.spill import Spill
from bridge_plugins.jobdir.regular_file import open_regular

if TYPE_CHECKING:  # imported when a pool runs: a one-process read never pays for them
    from concurrent.futures import Future, ProcessPoolExecutor

MIN_SPLIT_BYTES = 2 << 20
"""A smaller file (on disk) is read in one process: starting the workers would cost more than they save."""
IN_FLIGHT_PER_WORKER = 3
"""Chunks (about 1 MB each) sent ahead per worker: enough to keep it busy while this process merges."""
SLOT_BYTES = 4 << 20
"""A chunk (a block of 1 MB or two, cut at an event) goes to its worker through a slot of this
size in memory mapped before the workers are forked, so theirs too: written once, decoded where it
lies. A bigger chunk (a huge event) goes through the pool's pipe."""
NAMES_FILE_MAX_CHARS = 8 << 20
"""Names longer than this in all are not given to the workers (each would hold a copy)."""
_SLOTS: mmap.mmap | None = None  # the slots, in this process and (inherited) in the workers
_GPU = ("gpu_name", "gpu_ts", "gpu_dur", "gpu_corr", "gpu_stream", "gpu_cat")
TABLES = ("ops", "py", "annotations", "runtime")
"""The collector's per-thread tables (``Collected`` fields), merged part by part."""
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
    try:
        frozen = None if names is None else _frozen_ids(names)
    except (OSError, msgspec.DecodeError):  # gone or damaged: the part carries its names, as before
        frozen = None
    return part_of(records, frozen)


def part_of(records: list, frozen: dict[str, int] | None = None) -> tuple[str, Any]:
    """("part", what a fresh :class:`Collector` gathers from a chunk's records), or ("here", None)
    for a chunk past a cap on its own, or with more events than SPILL_AT (a part holds no spill
    file: it could not cross to the reading process).

    ``frozen``: the reading process's names once they reached MAX_NAMES (no name is added after):
    the chunk's events then get their final ids here, and a name not among them its shared entry,
    as that process would give it. ("frozen", (the part, with only those shared entries in
    ``names``, and the id the first of them has)): no name crosses the pipe or is hashed twice."""
    c = Collector()
    base = 0
    if frozen is not None:
        base = len(frozen)
        c._ids = frozen  # full: the collector only reads it (Collector._id)
        c.data.names = [""] * base  # stand-ins: the shared entries made here get ids from base on
    c.on_records(records)
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
    assert _SLOTS is not None  # mapped before this worker was forked
    view = memoryview(_SLOTS)[offset : offset + size]
    try:
        return collect_chunk(view, at, last, names)
    finally:
        view.release()


def _remap(ids: array, mapping: np.ndarray) -> bytes:
    return mapping[np.frombuffer(ids, dtype=np.int32)].tobytes() if len(ids) else b""


def _used(columns: list[array], n: int) -> np.ndarray:
    """Which of the part's ``n`` local name ids appear in ``columns``."""
    mask = np.zeros(n, dtype=bool)
    for col in columns:
        if len(col):
            mask[np.frombuffer(col, dtype=np.int32)] = True
    return mask


def _name_maps(c: Collector, p: Collected) -> tuple[np.ndarray, np.ndarray] | None:
    """The part's name ids as ``c``'s (for its GPU events, and for the rest), registering its new
    names as the collector would; None (``c`` unchanged) where the order of events decides.

    Past MAX_NAMES a name gets no id of its own but a shared entry: its kernel type's for a GPU
    event, "(other operators)" for the rest, each made when first needed. Where the part would make
    two or more of them, their ids depend on which event came first, which the part does not keep."""
    ids, names = c._ids, p.names
    known = np.array(list(map(ids.get, names, repeat(-1))), dtype=np.int64)
    new = np.flatnonzero(known < 0)  # in the order the chunk met them
    room = max(collect.MAX_NAMES - len(ids), 0)
    below, past = new[:room], new[room:]
    gpu_past = cpu_past = past
    if len(past):
        tables = [t[2] for table in TABLES for t in getattr(p, table).tails.values()]
        gpu_past = past[_used([p.gpu_name], len(names))[past]]
        cpu_past = past[_used([p.cpu_corr_name, *tables], len(names))[past]]
        kinds: set[str | None] = {collect._kernel_type(names[i]) for i in gpu_past}
        if len(cpu_past):
            kinds.add(None)
        if len(kinds - c._shared.keys()) > 1:
            return None
    for i in below:
        known[i] = c._id(names[i], False)
    gpu, cpu = known.copy(), known  # a past name's entry stays -1 where its kind has no event
    for i in gpu_past:
        gpu[i] = c._id(names[i], True)
    if len(cpu_past):
        cpu[cpu_past] = c._id(names[cpu_past[0]], False)  # the one "(other operators)" entry
    return gpu.astype(np.int32), cpu.astype(np.int32)


def _frozen_map(c: Collector, p: Collected, base: int) -> np.ndarray | None:
    """The ids of a part gathered with ``c``'s first ``base`` names (:func:`part_of`) as ``c``'s:
    its own ids below ``base``, and its shared entries (``p.names``) ``c``'s, made where needed;
    None (``c`` unchanged) where two would be made: which comes first decides their ids."""
    kinds = [p.name_types.get(base + k) for k in range(len(p.names))]  # a CPU entry has no type
    assert len(c._ids) == base  # the names were full when written: none was added since
    if len(set(kinds) - c._shared.keys()) > 1:
        return None
    mapping = np.arange(base + len(kinds), dtype=np.int32)
    for k, kind in enumerate(kinds):
        mapping[base + k] = c._shared_entry(kind)
    return mapping


def merge(c: Collector, p: Collected, frozen_base: int | None = None) -> bool:
    """Add one chunk's part to ``c`` as if ``c`` had read the chunk; False (``c`` unchanged) where
    that needs the order of the chunk's events, which the part does not keep: past the cap on
    threads (they then share one entry, their events interleaved) or on steps, or past the cap on
    names where the part needs two new shared entries (see :func:`_name_maps`). ``frozen_base``:
    a part gathered with ``c``'s names (:func:`part_of`), the id of its first shared entry."""
    d = c.data
    new_threads = [t for t in p.threads if t not in c._threads]
    new_steps = sum(1 for n in p.steps if n not in d.steps)
    if len(c._threads) + len(new_threads) > collect.MAX_THREADS or len(d.steps) + new_steps > collect.MAX_STEPS:
        return False
    if frozen_base is None:
        maps = _name_maps(c, p)
    else:
        one = _frozen_map(c, p, frozen_base)
        maps = None if one is None else (one, one)
    if maps is None:
        return False
    gpu_names, names = maps
    for key in new_threads:
        c._thread(key)
    threads = np.array([c._threads[t] for t in p.threads], dtype=np.int32)
    d.events += p.events
    base = len(d.gpu_ts)
    d.gpu_name.frombytes(_remap(p.gpu_name, gpu_names))
    for field in _GPU[1:]:
        getattr(d, field).extend(getattr(p, field))
    d.gpu_count = len(d.gpu_ts)
    if len(p.mem_index):
        d.mem_index.frombytes((np.frombuffer(p.mem_index, dtype=np.int64) + base).tobytes())
        d.mem_bytes.extend(p.mem_bytes)
        d.mem_bw.extend(p.mem_bw)
    if len(p.cpu_corr):
        d.cpu_corr.extend(p.cpu_corr)
        d.cpu_corr_ts.extend(p.cpu_corr_ts)
        d.cpu_corr_dur.extend(p.cpu_corr_dur)
        d.cpu_corr_name.frombytes(_remap(p.cpu_corr_name, names))
        d.cpu_corr_thread.frombytes(_remap(p.cpu_corr_thread, threads))
        tail = d._cpu_tail()
        if len(tail[0]) >= collect.SPILL_AT:  # where the collector's flush spills: the same blocks
            d.cpu_corr_spilled = d.cpu_corr_spilled or Spill()
            d.cpu_corr_spilled.write(tail)
    for table_name in TABLES:
        table, local = getattr(d, table_name), getattr(p, table_name)
        for key, (ts, dur, ids) in local.tails.items():
            arrays = table.tail(key)
            arrays[0].extend(ts)
            arrays[1].extend(dur)
            arrays[2].frombytes(_remap(ids, names))
            if len(arrays[0]) >= collect.SPILL_AT:
                table.spill(key)
    _merge_steps(d, p)
    return True


def _merge_steps(d: Collected, p: Collected) -> None:
    """The ProfilerStep figures, by the collector's rules (``_profiler_step``) applied to the part's."""
    for name in p.profiler_step_names:
        if len(d.profiler_step_names) < 2:  # only whether there are two matters
            d.profiler_step_names.add(name)
    end = p.last_profiler_step_end
    if end is not None and (d.last_profiler_step_end is None or end > d.last_profiler_step_end):
        d.last_profiler_step_end = end
    for n, dur in p.steps.items():  # in the order the part first kept each step
        if (len(d.steps) < collect.MAX_STEPS or n in d.steps) and dur >= d.steps.get(n, 0.0):
            d.steps[n], d.step_ts[n] = dur, p.step_ts[n]


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
            typed_ok, values = chunked.decode_chunk(data, self.typed, at, last)
        except chunked.Truncated:
            return False
        chunked.deliver(typed_ok, values, self.c.on_event, self.c.on_records)
        return True


def read_split(
    fh: chunked.ByteStream, c: Collector, pool: ProcessPoolExecutor, window: int, slots: mmap.mmap | None = None
) -> bool:
    """Read ``fh`` into ``c`` with ``pool``, ``window`` chunks out at most (through ``slots``, if
    given: ``window`` x SLOT_BYTES mapped before the pool's workers were forked). False: read it
    again in one process (see the module doc). Raises what :func:`chunked.read_events` raises."""
    header, rest, offset = chunked._header(chunked._blocks(fh))
    c.on_header(header)
    split = _Split(c, pool, window, slots)
    try:
        try:
            for chunk, at, last in chunked._chunks(rest, offset, fh):
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
    (the same data as one). Raises TraceError as :func:`reader.read_trace` does."""
    path = Path(path)
    c = Collector()
    if jobs > 1 and file_size(path) >= MIN_SPLIT_BYTES and _read_split(path, c, jobs):
        return c.data
    read_trace(path, c.on_header, c.on_event, Record, c.on_records)  # on_header starts c afresh
    return c.data


def _read_split(path: Path, c: Collector, jobs: int) -> bool:
    """:func:`read_split` of the file, with a pool of ``jobs`` and its slots made and undone here."""
    global _SLOTS
    window = IN_FLIGHT_PER_WORKER * jobs
    slots = mmap.mmap(-1, window * SLOT_BYTES) if FORKS else None  # shared; pages only as written
    _SLOTS = slots
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
        _SLOTS = None
        if slots is not None:
            slots.close()
