"""Where the host waits for the GPU: stream/device/event synchronizations, blocking copies and
``.item()``-style reads of a GPU value (``aten::_local_scalar_dense``), with count per step and
the Python stack (or operator stack) where each was recorded.

Each such wait stops the CPU from queuing more work, so the GPU runs dry after it: the cost is
the wait itself plus the refill.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from bridge_plugins.analysis.analyzers.threads import columns, enclosing, outermost
from bridge_plugins.analysis.trace.collect import Collected
from bridge_plugins.analysis.trace.gpu_events import NEARLY_SORTED
from bridge_plugins.analysis.trace.spill import ThreadColumns

SYNC_CALLS = frozenset(
    {
        "cudaStreamSynchronize",
        "cudaDeviceSynchronize",
        "cudaEventSynchronize",
        "cudaMemcpy",  # the blocking copy (cudaMemcpyAsync is not)
        "hipStreamSynchronize",
        "hipDeviceSynchronize",
        "hipEventSynchronize",
        "hipMemcpy",
    }
)
SCALAR_READS = frozenset({"aten::_local_scalar_dense"})  # what .item(), bool(t), int(t) call
STACK_DEPTH = 8
EXAMPLES = 200  # stacks looked up per trace (the first ones), enough to name the sites


@dataclass
class SyncSite:
    stack: list[str]  # outermost first, at most STACK_DEPTH frames
    count: int
    total_us: float


@dataclass
class SyncPoints:
    count: int
    total_us: float
    by_name: dict[str, int]
    per_step: dict[int, int]  # ProfilerStep number -> syncs started inside it
    sites: list[SyncSite] = field(default_factory=list)  # by count
    note: str | None = None


def _events(d: Collected) -> tuple[list[tuple[float, float, int, tuple]], dict[str, int]]:
    """(ts, dur, name id, thread key) of every sync, and counts by name (a block of calls or of a
    thread's operators at a time)."""
    out: list[tuple[float, float, int, tuple]] = []
    by_name: defaultdict[str, int] = defaultdict(int)
    sync_ids = [i for i, n in enumerate(d.names) if n in SYNC_CALLS]
    if sync_ids:
        for ts, dur, name, thread in d.cpu_call_blocks((1, 2, 3, 4)):
            for i in np.flatnonzero(np.isin(name, sync_ids)).tolist():
                out.append((float(ts[i]), float(dur[i]), int(name[i]), d.threads[int(thread[i])]))
    read_ids = [i for i, n in enumerate(d.names) if n in SCALAR_READS]
    if read_ids:
        for key in d.ops:
            ts, dur, ids = _where_named(d.ops, key, read_ids)
            if len(ts):
                waits = _waiting(d, key, ts, dur)
                out += zip(
                    ts[waits].tolist(), dur[waits].tolist(), ids[waits].tolist(), [key] * int(waits.sum()), strict=True
                )
    for _, _, n, _ in out:
        by_name[d.names[n]] += 1
    return sorted(out), dict(by_name)


def _where_named(table: ThreadColumns, key: tuple, ids: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The thread's events (ts, dur, name id) with one of the name ``ids``, in trace order."""
    found = []
    for ts, dur, names in table.blocks(key):
        m = np.isin(names, ids)
        found.append((ts[m], dur[m], names[m]))
    ts, dur, names = (np.concatenate([f[i] for f in found]) for i in range(3))
    return ts, dur, names


def _waiting(d: Collected, key: tuple, ts: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """Mask over a thread's scalar reads (``ts``, ``dur``): those that make the host wait on a device.

    On a GPU trace, those that issued a CUDA call (the device-to-host copy and its sync): a read
    of a host tensor (e.g. the optimizer's step counters) issues none. On a CPU-only trace nothing
    waits, so count the reads that would on a GPU: all but those inside ``Optimizer.step`` (its
    step counters live on the host in GPU runs too).
    """
    if d.gpu_count:
        thread = d.threads.index(key) if key in d.threads else -1
        has_call = np.zeros(len(ts), dtype=bool)
        for call_ts, call_thread in d.cpu_call_blocks((1, 4)):  # a call inside the read, in any block
            t = np.sort(call_ts[call_thread == thread], kind=NEARLY_SORTED)
            if len(t):
                first = np.searchsorted(t, ts)
                has_call |= (first < len(t)) & (t[np.minimum(first, len(t) - 1)] <= ts + dur)
        return has_call
    optimizer = [i for i, n in enumerate(d.names) if n.startswith("Optimizer.step")]
    inside = np.zeros(len(ts), dtype=bool)
    for table in (d.ops, d.annotations):  # torch records Optimizer.step as a record_function
        if key in table:
            starts, ends, names = columns(table[key])
            m = np.isin(names, optimizer)
            if m.any():
                inside |= outermost(starts[m], ends[m], ts) >= 0
    return ~inside


def _enclosing_any(cols: Sequence[np.ndarray], times: list[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The events of a thread's (ts, dur, name id) columns, or of a block of them, that contain one
    of ``times``: the few a stack needs, so the sorting below does not copy a whole thread's operators."""
    ts, dur, ids = cols
    t = np.sort(np.asarray(times, dtype=np.float64))
    if len(t) == 0:
        return ts[:0], dur[:0], ids[:0]
    first = np.searchsorted(t, ts)  # each event's first time at or after its start: inside it if before its end
    m = (first < len(t)) & (t[np.minimum(first, len(t) - 1)] <= ts + dur)
    return ts[m], dur[m], ids[m]


def _enclosing_any_block(
    table: ThreadColumns, key: tuple, times: list[float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_enclosing_any` of a thread's events, a block at a time: no thread is read whole."""
    found = [_enclosing_any(block, times) for block in table.blocks(key)]
    ts, dur, ids = (np.concatenate([f[i] for f in found]) for i in range(3))
    return ts, dur, ids


def _thread_columns(d: Collected, key: tuple, times: list[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(start, end, name id) of the thread's Python frames when recorded (with_stack), else of its
    annotations and operators, that contain one of ``times``, by start, enclosing first."""
    tables = [d.py] if key in d.py else [d.annotations, d.ops]
    parts = [columns(_enclosing_any_block(table, key, times)) for table in tables if key in table]
    if not parts:
        return None
    starts, ends, names = (np.concatenate([p[i] for p in parts]) for i in range(3))
    order = np.lexsort((starts - ends, starts))  # by start, the enclosing one first
    return starts[order], ends[order], names[order]


def _stack(d: Collected, cols: tuple[np.ndarray, np.ndarray, np.ndarray] | None, t: float) -> list[str]:
    """The frames enclosing time t in a thread's columns (see _thread_columns), innermost last."""
    if cols is None:
        return []
    starts, ends, names = cols
    frames = [
        d.names[i] for i in names[enclosing(starts, ends, t)].tolist() if not d.names[i].startswith("ProfilerStep#")
    ]
    return frames[-STACK_DEPTH:]


def sync_points(d: Collected, steps: dict[int, tuple[float, float]]) -> SyncPoints:
    events, by_name = _events(d)
    times = np.sort(np.array([e[0] for e in events], dtype=np.float64))
    per_step = {
        n: int(np.searchsorted(times, start + dur, side="right") - np.searchsorted(times, start, side="left"))
        for n, (start, dur) in steps.items()
    }
    sites: dict[tuple, list[float]] = {}
    examples = events[:EXAMPLES]
    stacks: list[tuple] = [()] * len(examples)
    for key in dict.fromkeys(e[3] for e in examples):  # one thread's whole columns in memory at a time
        cols = _thread_columns(d, key, [e[0] for e in examples if e[3] == key])
        for j, (ts, _, _, k) in enumerate(examples):
            if k == key:
                stacks[j] = tuple(_stack(d, cols, ts))
        del cols
    for (_, dur, name, _), found in zip(examples, stacks, strict=True):
        stack = found or (d.names[name],)
        if stack[-1] != d.names[name]:
            stack = (*stack, d.names[name])[-STACK_DEPTH:]
        site = sites.setdefault(stack, [0, 0.0])
        site[0] += 1
        site[1] += dur
    note = None
    if len(events) > EXAMPLES:
        note = f"stacks from the first {EXAMPLES} of {len(events)} synchronizations"
    return SyncPoints(
        count=len(events),
        total_us=float(sum(e[1] for e in events)),
        by_name=by_name,
        per_step=per_step,
        sites=sorted((SyncSite(list(k), int(v[0]), float(v[1])) for k, v in sites.items()), key=lambda s: -s.count),
        note=note,
    )
