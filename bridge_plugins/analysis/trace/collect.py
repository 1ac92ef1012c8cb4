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
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field
from typing import Any, Union

import msgspec
import numpy as np

from bridge_plugins.analysis.trace import categories as cats
from bridge_plugins.analysis.trace.spill import SPILL_AT, Spill, ThreadColumns, blocks, columns

STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
_INT64_LIMIT = 2**63
_NUMBER = (int, float)
_NAN = float("nan")
_GPU_SYNC_NAMES = frozenset(("Event Sync", "Context Sync"))  # device-side waits: HTA counts them as neither side
MAX_NAMES = 100_000
MAX_THREADS = 10_000
MAX_STEPS = 100_000
_OTHER_THREAD = ("(other threads)", "(other threads)")
_UNSEEN = object()  # a pid, tid or category no event has
GPU_KERNEL, GPU_MEMCPY, GPU_MEMSET, GPU_OTHER = 0, 1, 2, 3
_GPU_CATS = {c: k for k, names in enumerate((cats.KERNEL, cats.MEMCPY, cats.MEMSET)) for c in names}
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


@dataclass
class Collected:
    """What one trace holds, gathered by :class:`Collector`."""

    header: dict = field(default_factory=dict)
    events: int = 0
    names: list[str] = field(default_factory=list)
    steps: dict[int, float] = field(default_factory=dict)  # ProfilerStep number -> duration (us)
    profiler_step_names: set[str] = field(default_factory=set)  # every name containing ProfilerStep (HTA's test)
    last_profiler_step_end: float | None = None
    gpu_count: int = 0  # GPU events collected: the gpu_* columns' length until take_gpu_columns()
    gpu_ts: array = field(default_factory=lambda: array("d"))
    gpu_dur: array = field(default_factory=lambda: array("d"))
    gpu_name: array = field(default_factory=lambda: array("i"))
    gpu_corr: array = field(default_factory=lambda: array("q"))
    gpu_stream: array = field(default_factory=lambda: array("q"))
    gpu_cat: array = field(default_factory=lambda: array("b"))  # GPU_KERNEL, GPU_MEMCPY, GPU_MEMSET, GPU_OTHER
    # memcpy/memset only: index into the gpu arrays, bytes, bandwidth Kineto recorded (GB/s, NaN if absent)
    mem_index: array = field(default_factory=lambda: array("q"))
    mem_bytes: array = field(default_factory=lambda: array("d"))
    mem_bw: array = field(default_factory=lambda: array("d"))
    # CPU events with a correlation (launch calls): the columns' latest elements; whole: cpu_calls()
    cpu_corr: array = field(default_factory=lambda: array("q"))
    cpu_corr_ts: array = field(default_factory=lambda: array("d"))
    cpu_corr_dur: array = field(default_factory=lambda: array("d"))
    cpu_corr_name: array = field(default_factory=lambda: array("i"))
    cpu_corr_thread: array = field(default_factory=lambda: array("i"))  # index into ``threads``
    cpu_corr_spilled: Spill | None = None  # their earlier elements, moved to a temporary file
    threads: list[tuple[Hashable, Hashable]] = field(
        default_factory=list
    )  # (pid, tid) of CPU threads, by first appearance
    # per thread (pid, tid) -> (ts, dur, name id), spill-aware (table[key] gives whole columns):
    ops: ThreadColumns = field(default_factory=ThreadColumns)  # CPU operators, for self time
    py: ThreadColumns = field(default_factory=ThreadColumns)  # Python frames (traces recorded with_stack)
    # record_function spans (``user_annotation``: ProfilerStep#N, Optimizer.step...)
    annotations: ThreadColumns = field(default_factory=ThreadColumns)
    runtime: ThreadColumns = field(default_factory=ThreadColumns)  # CUDA runtime and driver calls (step_breakdown)
    step_ts: dict[int, float] = field(default_factory=dict)  # ProfilerStep number -> start (us)
    name_types: dict[int, str] = field(default_factory=dict)  # kernel type of the shared entries past MAX_NAMES

    def _cpu_tail(self) -> tuple[array, ...]:
        return (self.cpu_corr, self.cpu_corr_ts, self.cpu_corr_dur, self.cpu_corr_name, self.cpu_corr_thread)

    def cpu_calls(self) -> list[np.ndarray]:
        """(correlation, ts, dur, name id, thread index) of every CPU-side event with a correlation, whole."""
        return columns(self._cpu_tail(), self.cpu_corr_spilled)

    def cpu_call_blocks(self, which: tuple[int, ...] | None = None) -> Iterator[list[np.ndarray]]:
        """The columns of :meth:`cpu_calls` (all, or those at ``which``), a block at a time, in order:
        a pass over millions of calls in a few MB."""
        return blocks(self._cpu_tail(), self.cpu_corr_spilled, which)

    def cpu_call_count(self) -> int:
        return len(self.cpu_corr) + (self.cpu_corr_spilled.size if self.cpu_corr_spilled is not None else 0)

    def spill_rest(self) -> None:
        """Once read: the last elements of each column that spilled go to its file too, so that a big
        trace's collected state is its GPU events and little else (passes read blocks anyway)."""
        if self.cpu_corr_spilled is not None and len(self.cpu_corr):
            self.cpu_corr_spilled.write(self._cpu_tail())
        for table in (self.ops, self.py, self.annotations, self.runtime):
            for key in table.spilled:
                if len(table.tails[key][0]):
                    table.spill(key)

    def take_gpu_columns(self) -> dict[str, array]:
        """The gpu_* columns by field name, left empty here (``gpu_count`` stays): for the one
        reader that turns them into compact sorted columns, so that they are not held twice."""
        names = ("gpu_ts", "gpu_dur", "gpu_name", "gpu_corr", "gpu_stream", "gpu_cat")
        taken = {n: getattr(self, n) for n in names}
        for n, a in taken.items():
            setattr(self, n, array(a.typecode))
        return taken

    def thread_ops(self) -> Iterator[tuple[tuple, np.ndarray, np.ndarray, np.ndarray]]:
        """((pid, tid), ts, dur, name id) of each thread's CPU operators, whole, one thread at a time."""
        for key in self.ops:
            ts, dur, ids = self.ops[key]
            yield key, ts, dur, ids


def _kernel_type(name: str) -> str:
    from bridge_plugins.analysis.trace.gpu_breakdown import kernel_type  # that module imports this one

    return kernel_type(name)


class Collector:
    """Feed it with :func:`reader.read_trace` (``on_header``, ``on_event``, ``Event``, ``on_records``);
    read ``.data``."""

    def __init__(self) -> None:
        self.on_header({})

    def on_header(self, header: dict) -> None:
        self.data = Collected(header=header if isinstance(header, dict) else {})
        self._ids: dict[str, int] = {}  # name -> index into data.names
        self._shared: dict[str | None, int] = {}  # kernel type (None: CPU) -> id shared past MAX_NAMES
        self._threads: dict[tuple[Hashable, Hashable], int] = {}  # (pid, tid) -> index into data.threads

    def on_event(self, e: dict) -> None:
        """One event as a dict (the streaming reader's and odd events' path)."""
        self.on_records([event_from_dict(e)])

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
        add_ts = add_dur = add_id = gpu_ts.append  # rebound before first use (op_cat is _UNSEEN)
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
                    if kind in (GPU_MEMCPY, GPU_MEMSET):
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
                cat = "user_annotation"  # the old format's torch record_function span: an annotation
            if "ProfilerStep" in name:
                self._profiler_step(name, cat == "user_annotation", ts, dur)
            if e.tid == op_tid and cat == op_cat and e.pid == op_pid:
                pass  # the same thread's lists as the last table event
            elif cat in tables:
                op_cat, op_pid, op_tid = cat, e.pid, e.tid
                lists = ops.get((cat, op_pid, op_tid))
                if lists is None:
                    lists = ops[cat, op_pid, op_tid] = self._table_lists(cat, op_pid, op_tid, by_thread)
                add_ts, add_dur, add_id = lists[0].append, lists[1].append, lists[2].append
            else:
                continue
            add_ts(ts)
            add_dur(dur)
            i = ids_get(name, other)
            if i is None:
                i = self._id(name, False)
                other = self._shared.get(None)
            add_id(i)
        self._flush(gpu, mem, cpu, tables, by_thread)

    @staticmethod
    def _tables(d: Collected) -> tuple[tuple[ThreadColumns, tuple[str, ...]], ...]:
        """Each per-thread table with the categories it keeps (trace/categories.py)."""
        return (
            (d.py, cats.PYTHON),
            (d.ops, cats.OPERATOR),
            (d.annotations, cats.ANNOTATION),
            (d.runtime, cats.RUNTIME),
        )

    def _table_lists(
        self, cat: str, pid: Hashable, tid: Hashable, by_thread: dict[tuple[str, int], tuple[list, list, list]]
    ) -> tuple[list, list, list]:
        """This chunk's (ts, dur, name id) lists for ``cat`` on thread (``pid``, ``tid``) (registered
        here when first seen; threads past MAX_THREADS share one entry, and so share the lists)."""
        key = (pid, tid)
        known = self._threads.get(key)
        thread = self._thread(key) if known is None else known
        lists = by_thread.get((cat, thread))
        if lists is None:
            lists = by_thread[cat, thread] = ([], [], [])
        return lists

    def _flush(
        self,
        gpu: tuple[list, ...],
        mem: tuple[list, ...],
        cpu: tuple[list, ...],
        tables: dict[str, ThreadColumns],
        by_thread: dict[tuple[str, int], tuple[list, list, list]],
    ) -> None:
        """A chunk's lists into the arrays, in event order; columns past SPILL_AT to their spill files."""
        d = self.data
        if gpu[0]:
            base = len(d.gpu_ts)
            for column, values in zip(
                (d.gpu_name, d.gpu_ts, d.gpu_dur, d.gpu_corr, d.gpu_stream, d.gpu_cat), gpu, strict=True
            ):
                column.fromlist(values)
            d.gpu_count = len(d.gpu_ts)
            if mem[0]:
                d.mem_index.fromlist([base + i for i in mem[0]])
                d.mem_bytes.fromlist(mem[1])
                d.mem_bw.fromlist(mem[2])
        if cpu[0]:
            tail = d._cpu_tail()
            for column, values in zip(tail, cpu, strict=True):
                column.fromlist(values)
            if len(tail[0]) >= SPILL_AT:
                d.cpu_corr_spilled = d.cpu_corr_spilled or Spill()
                d.cpu_corr_spilled.write(tail)
        for (cat, thread), lists in by_thread.items():
            table, key = tables[cat], d.threads[thread]
            arrays = table.tail(key)
            for column, values in zip(arrays, lists, strict=True):
                column.fromlist(values)
            if len(arrays[0]) >= SPILL_AT:
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
        return self._shared_entry(_kernel_type(name) if gpu else None)

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
