"""One pass over a trace's events, keeping only the few numbers each analysis needs, compactly.

Why a collector: the trace is streamed once (see reader.py), so everything the figures need
is gathered in that pass into typed arrays (about 30 bytes per kept event instead of a dict of
~1 KB), and computed at the end with numpy. Which events are GPU events (HTA's rule):
docs/analysis-schema.md; one typed loop for both readers' events, the spilled CPU columns and how
to read them: docs/architecture.md; the bounds on names and threads: docs/limits.md.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Hashable
from struct import pack

from bridge_plugins.analysis.trace import categories as cats
from bridge_plugins.analysis.trace import native
from bridge_plugins.analysis.trace.collected import Collected as Collected
from bridge_plugins.analysis.trace.kernel_types import kernel_type
from bridge_plugins.analysis.trace.records import Args as Args
from bridge_plugins.analysis.trace.records import Event as Event
from bridge_plugins.analysis.trace.records import Record as Record
from bridge_plugins.analysis.trace.records import Skipped as Skipped
from bridge_plugins.analysis.trace.records import event_from_dict as event_from_dict
from bridge_plugins.analysis.trace.spill import SPILL_AT, Spill, ThreadColumns

STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
_INT64_LIMIT = 2**63
_GPU_SYNC_NAMES = frozenset(("Event Sync", "Context Sync"))  # device-side waits: HTA counts them as neither side
MAX_NAMES = 100_000
MAX_THREADS = 10_000
MAX_STEPS = 100_000
_OTHER_THREAD = ("(other threads)", "(other threads)")
_UNSEEN = object()  # a pid, tid or category no event has
GPU_KERNEL, GPU_MEMCPY, GPU_MEMSET, GPU_OTHER = 0, 1, 2, 3
_MEM_KINDS = frozenset((GPU_MEMCPY, GPU_MEMSET))
TABLE_CATEGORIES = (
    ("py", cats.PYTHON),
    ("ops", cats.OPERATOR),
    ("annotations", cats.ANNOTATION),
    ("runtime", cats.RUNTIME),
)
"""The collector's per-thread tables (``Collected`` fields) and the categories each keeps."""
_TABLE_OF = {c: table for table, names in TABLE_CATEGORIES for c in names}
CPU_GROUP = ("cpu",)
"""The marks' key of the cpu_corr_* columns (see ``Collector.marks``)."""
_GPU_CATS = {c: k for k, names in enumerate((cats.KERNEL, cats.MEMCPY, cats.MEMSET)) for c in names}
_NATIVE_CODES = native.codes(_GPU_CATS, GPU_OTHER, _TABLE_OF)


def _extend(column: array, values: list | bytearray) -> None:
    """``column.fromlist(values)``, in half the time: ``struct`` converts each number with one C
    call where ``array.fromlist`` parses it as an argument (the same native bytes either way). A
    bytearray (the native reader's) holds those bytes already."""
    column.frombytes(values if values.__class__ is bytearray else pack(f"{len(values)}{column.typecode}", *values))


class Collector:
    """Feed it with :func:`reader.read_trace` (``on_header``, ``on_event``, ``Event``, ``on_records``);
    read ``.data``."""

    def __init__(self) -> None:
        self.marks: dict[tuple, list[int]] | None = None
        """None: spill as the columns grow. A dict (a range worker's, trace/split_worker.py): spill
        nothing, and note instead each group's length after every flush that added to it (("cpu",),
        or (table, thread key)), so that the reading process spills the part where one pass would."""
        self.on_header({})

    def on_header(self, header: dict) -> None:
        self.data = Collected(header=header if isinstance(header, dict) else {})
        if self.marks is not None:
            self.marks = {}
        self._ids: dict[str, int] = {}  # name -> index into data.names
        self._shared: dict[str | None, int] = {}  # kernel type (None: CPU) -> id shared past MAX_NAMES
        self._threads: dict[tuple[Hashable, Hashable], int] = {}  # (pid, tid) -> index into data.threads

    def on_event(self, e: dict) -> None:
        """One event as a dict (the streaming reader's and odd events' path)."""
        self.on_records([event_from_dict(e)])

    def on_chunk(self, chunk: bytes | bytearray | memoryview) -> bool:
        """A chunk (a JSON array of whole events) parsed and collected by the native reader as
        :meth:`on_records` would collect its records; False, with nothing changed, where it leaves
        the chunk to the Python reader (not built, or a chunk it does not take: trace/native.py)."""
        columns = native.collect_chunk(chunk, self, self._ids, self._threads, _NATIVE_CODES)
        if columns is None:
            return False
        n, gpu, mem, cpu, by_thread = columns
        self.data.events += n
        self._flush(gpu, mem, cpu, {c: t for t, names in self._tables(self.data) for c in names}, by_thread)
        return True

    def on_records(self, records: list[Event | Skipped]) -> None:
        """Called with every chunk of a big file: written for speed (one loop, one attribute read
        per field, no type checks: :class:`Event` has the types). The loop appends to lists (a list
        append is a few bytecodes; an ``array`` append parses its argument); they go into the
        arrays, and past ``SPILL_AT`` to the spill files, once per chunk, in :meth:`_flush`."""
        d, ids, threads = self.data, self._ids, self._threads
        d.events += len(records)
        ids_get, threads_get = ids.get, threads.get
        gpu: tuple[list, ...] = ([], [], [], [], [], [])  # the gpu_* columns, in _GPU_COLUMNS' order
        gpu_name, gpu_ts, gpu_dur, gpu_corr, gpu_stream, gpu_cat = gpu
        mem: tuple[list, ...] = ([], [], [])  # index into this chunk's gpu lists, bytes, bandwidth
        mem_index, mem_bytes, mem_bw = mem
        cpu: tuple[list, ...] = ([], [], [], [], [])  # the cpu_corr_* columns, in Collected._cpu_tail's order
        cpu_corr, cpu_corr_ts, cpu_corr_dur, cpu_corr_name, cpu_corr_thread = cpu
        tables = {c: t for t, names in self._tables(d) for c in names}
        old_operator, torch_annotation = cats.OLD_OPERATOR, cats.TORCH_ANNOTATION_RE.match
        ops: dict[tuple, tuple[list, list, list]] = {}  # (cat, pid, tid) -> its table's lists for the thread
        by_thread: dict[tuple[str, int], tuple[list, list, list]] = {}  # (cat, thread) -> those lists
        # Consecutive events mostly come from one thread: the last (pid, tid) and its index, and the
        # last table event's (cat, pid, tid) and its lists' appends, are reused without a lookup.
        last_pid: object = _UNSEEN
        last_tid: object = _UNSEEN
        last_thread = -1
        op_cat: object = _UNSEEN
        op_pid: object = _UNSEEN
        op_tid: object = _UNSEEN
        op_ts = op_dur = op_id = gpu_ts  # rebound before first use (op_cat is _UNSEEN)
        # Past MAX_NAMES every unknown CPU name gets "(other operators)": once it exists, a lookup
        # with it as the default replaces a call per event (10^6 distinct names: half the time).
        other = self._shared.get(None)
        for e in records:
            if e.__class__ is not Event:
                continue
            cat, ts, dur = e.cat, e.ts, e.dur  # an Event: checked above
            if cat is None or cat == "Trace" or ts != ts or dur != dur:  # no category, or a time NaN: none
                continue
            name, args = e.name, e.args
            corr = args.correlation
            if corr >= 0:
                if corr >= _INT64_LIMIT:
                    continue  # no launch has such an id, and it would not fit the arrays
                stream = args.stream
                if stream >= 0:
                    i = ids_get(name)
                    gpu_name.append(self._id(name, True) if i is None else i)
                    gpu_ts.append(ts)
                    gpu_dur.append(dur)
                    gpu_corr.append(corr)
                    gpu_stream.append(stream if stream < _INT64_LIMIT else _INT64_LIMIT - 1)
                    kind = _GPU_CATS.get(cat, GPU_OTHER)
                    gpu_cat.append(kind)
                    if kind in _MEM_KINDS:
                        mem_index.append(len(gpu_ts) - 1)
                        mem_bytes.append(args.bytes)
                        mem_bw.append(args.bandwidth)
                    continue
                if name in _GPU_SYNC_NAMES:
                    continue
                pid, tid = e.pid, e.tid
                if tid != last_tid or pid != last_pid:
                    key = (pid, tid)
                    known = threads_get(key)
                    last_thread = self._thread(key) if known is None else known
                    last_pid, last_tid = pid, tid
                i = ids_get(name, other)
                if i is None:
                    i = self._id(name, False)
                    other = self._shared.get(None)
                cpu_corr_name.append(i)
                cpu_corr.append(corr)
                cpu_corr_ts.append(ts)
                cpu_corr_dur.append(dur)
                cpu_corr_thread.append(last_thread)
            if cat in old_operator and torch_annotation(name):
                cat = native.ANNOTATION  # the old format's torch record_function span: an annotation
            if "ProfilerStep" in name:
                self._profiler_step(name, cat == native.ANNOTATION, ts, dur)
            if e.tid == op_tid and cat == op_cat and e.pid == op_pid:
                pass  # the same thread's lists as the last table event
            elif cat in tables:
                op_cat, op_pid, op_tid = cat, e.pid, e.tid
                lists = ops.get((cat, op_pid, op_tid))
                if lists is None:
                    lists = ops[cat, op_pid, op_tid] = self._table_lists(cat, op_pid, op_tid, by_thread)
                op_ts, op_dur, op_id = lists
            else:
                continue
            op_ts.append(ts)
            op_dur.append(dur)
            i = ids_get(name, other)
            if i is None:
                i = self._id(name, False)
                other = self._shared.get(None)
            op_id.append(i)
        self._flush(gpu, mem, cpu, tables, by_thread)

    @staticmethod
    def _tables(d: Collected) -> tuple[tuple[ThreadColumns, tuple[str, ...]], ...]:
        """Each per-thread table with the categories it keeps (trace/categories.py)."""
        return tuple((getattr(d, table), names) for table, names in TABLE_CATEGORIES)

    def _table_lists(
        self, cat: str, pid: Hashable, tid: Hashable, by_thread: dict[tuple[str, int], tuple], kind: type = list
    ) -> tuple:
        """This chunk's (ts, dur, name id) lists for ``cat`` on thread (``pid``, ``tid``) (registered
        here when first seen; threads past MAX_THREADS share one entry, and so share the lists);
        ``kind`` bytearray: the native reader's columns of bytes."""
        key = (pid, tid)
        known = self._threads.get(key)
        thread = self._thread(key) if known is None else known
        lists = by_thread.get((cat, thread))
        if lists is None:
            lists = by_thread[cat, thread] = (kind(), kind(), kind())
        return lists

    def _flush(
        self,
        gpu: tuple[list | bytearray, ...],
        mem: tuple[list | bytearray, ...],
        cpu: tuple[list | bytearray, ...],
        tables: dict[str, ThreadColumns],
        by_thread: dict[tuple[str, int], tuple],
    ) -> None:
        """A chunk's lists (or the native reader's bytes) into the arrays, in event order; columns
        past SPILL_AT to their spill files."""
        d = self.data
        if gpu[0]:
            base = len(d.gpu_ts)
            for column, values in zip(
                (d.gpu_name, d.gpu_ts, d.gpu_dur, d.gpu_corr, d.gpu_stream, d.gpu_cat), gpu, strict=True
            ):
                _extend(column, values)
            d.gpu_count = len(d.gpu_ts)
            if mem[0]:
                index = mem[0]
                _extend(d.mem_index, [base + i for i in (array("q", index) if type(index) is bytearray else index)])
                _extend(d.mem_bytes, mem[1])
                _extend(d.mem_bw, mem[2])
        marks = self.marks
        if cpu[0]:
            tail = d._cpu_tail()
            for column, values in zip(tail, cpu, strict=True):
                _extend(column, values)
            if marks is not None:
                marks.setdefault(CPU_GROUP, []).append(len(tail[0]))
            elif len(tail[0]) >= SPILL_AT:
                d.cpu_corr_spilled = d.cpu_corr_spilled or Spill()
                d.cpu_corr_spilled.write(tail)
        for (cat, thread), lists in by_thread.items():
            table, key = tables[cat], d.threads[thread]
            arrays = table.tail(key)
            for column, values in zip(arrays, lists, strict=True):
                _extend(column, values)
            if marks is not None:
                marks.setdefault((_TABLE_OF[cat], key), []).append(len(arrays[0]))
            elif len(arrays[0]) >= SPILL_AT:
                table.spill(key)

    def _thread(self, key: tuple[Hashable, Hashable]) -> int:
        """The index of a new thread, or of the one entry threads past MAX_THREADS share."""
        if len(self._threads) >= MAX_THREADS:
            key = _OTHER_THREAD
            i = self._threads.get(key)
            if i is not None:
                return i
        i = self._threads[key] = len(self.data.threads)
        self.data.threads.append(key)
        return i

    def _id(self, name: str, gpu: bool) -> int:
        i = self._ids.get(name)
        if i is None:
            if len(self._ids) >= MAX_NAMES:
                return self._shared_id(name, gpu)
            i = self._ids[name] = len(self.data.names)
            self.data.names.append(name)
        return i

    def _shared_id(self, name: str, gpu: bool) -> int:
        """The one entry that names past MAX_NAMES share: per kernel type for GPU events."""
        return self._shared_entry(kernel_type(name) if gpu else None)

    def _shared_entry(self, kind: str | None) -> int:
        """The id of the entry shared past MAX_NAMES by kernel type ``kind`` (None: by operators),
        made when first needed."""
        i = self._shared.get(kind)
        if i is None:
            label = "(other operators)" if kind is None else f"(other {kind} kernels)"
            i = self._shared[kind] = len(self.data.names)
            self.data.names.append(f"{label}: past {MAX_NAMES:,} distinct names")
            if kind is not None:
                self.data.name_types[i] = kind
        return i

    def _profiler_step(self, name: str, annotation: bool, ts: float, dur: float) -> None:
        d = self.data
        if len(d.profiler_step_names) < 2:  # only whether there are two matters (gpu_breakdown)
            d.profiler_step_names.add(name)
        if d.last_profiler_step_end is None or ts + dur > d.last_profiler_step_end:
            d.last_profiler_step_end = ts + dur
        m = STEP_RE.match(name)
        if m and annotation:
            n = int(m.group(1))
            if (len(d.steps) < MAX_STEPS or n in d.steps) and dur >= d.steps.get(n, 0.0):
                d.steps[n], d.step_ts[n] = dur, ts
