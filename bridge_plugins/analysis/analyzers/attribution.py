"""Which CPU operators and Python modules own the GPU time, through the correlation ids.

Each kept GPU event is joined to the CPU call that launched it (``cudaLaunchKernel``...), and
that call to the top-level CPU operator running on its thread at that moment (e.g.
``aten::linear``, ``Optimizer.step#AdamW.step``) and, for traces recorded with stacks, to the
innermost ``nn.Module`` frame. GPU time is the sum of the events' durations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bridge_plugins.analysis.analyzers.threads import columns, containing_top, innermost, top_level
from bridge_plugins.analysis.trace.collect import Collected
from bridge_plugins.analysis.trace.gpu_events import EVENTS_AT, CpuCalls, GpuEvents
from bridge_plugins.analysis.trace.spill import ThreadColumns

MODULE_PREFIX = "nn.Module: "


@dataclass
class Owner:
    name: str
    gpu_us: float
    gpu_events: int


@dataclass
class Attribution:
    top_level_ops: list[Owner]  # by gpu_us
    modules: list[Owner]
    attributed_us: float  # GPU time with a top-level operator found
    unattributed_us: float
    note: str | None = None


def _owners(names: list[str], ids: np.ndarray, dur: np.ndarray) -> list[Owner]:
    """Per name id in ``ids`` (-1: none), its summed ``dur`` and count. The ids are shifted by one
    rather than the owned ones picked out: each name's bin adds the same terms in the same order,
    without copies of ``ids`` and ``dur`` (issue 32)."""
    if not (ids >= 0).any():
        return []
    shifted = ids + 1
    total = np.bincount(shifted, weights=dur)
    count = np.bincount(shifted)
    del shifted
    rows = [Owner(names[i], float(total[i + 1]), int(count[i + 1])) for i in np.flatnonzero(count[1:]).tolist()]
    return sorted(rows, key=lambda r: (-r.gpu_us, r.name))


def _per_thread(
    d: Collected,
    thread: np.ndarray,
    ts: np.ndarray,
    at: np.ndarray,
    events: Callable[[tuple], tuple[np.ndarray, np.ndarray, np.ndarray] | None],
    pick: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
    events_at: int | None = None,
) -> np.ndarray:
    """For CPU moments (thread index ``thread[i]``, time ``ts[at[i]]``): the name id of the event
    ``pick`` finds among the thread's ``events`` (start, end, name id; None: the thread has none), or
    -1. One thread at a time, and ``events_at`` moments at a time where ``pick`` answers each on its
    own; None: a thread's moments at once. The times are taken a block at a time, never all at once
    (issue 32: every moment's columns at once took 70 MB more on a 3 GB trace)."""
    owner = np.full(len(thread), -1, dtype=np.int32)  # name ids
    step = events_at or max(len(thread), 1)
    for ti in np.unique(thread).tolist():
        found = events(d.threads[ti])
        if found is None:
            continue
        starts, ends, names = found
        del found
        for a in range(0, len(thread), step):
            q = thread[a : a + step] == ti
            idx = pick(starts, ends, ts[at[a : a + step][q]])
            owner[a : a + step][q] = np.where(idx >= 0, names[np.maximum(idx, 0)] if len(names) else -1, -1)
    return owner


def _sorted_named(
    table: ThreadColumns, keep_name: Callable[[np.ndarray], np.ndarray]
) -> Callable[[tuple], tuple[np.ndarray, np.ndarray, np.ndarray] | None]:
    """A thread's events of ``table`` (sorted, see threads.columns) whose name ``keep_name`` keeps."""

    def events(key: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        if key not in table:
            return None
        starts, ends, names = columns(table[key])
        m = keep_name(names)
        return starts[m], ends[m], names[m]

    return events


def modules_at(d: Collected, thread: np.ndarray, ts: np.ndarray, at: np.ndarray) -> np.ndarray | None:
    """For CPU moments (thread index ``thread[i]``, time ``ts[at[i]]``): the name id of the innermost
    ``nn.Module`` frame running then, or -1; None when the trace has no module frames (recorded
    without with_stack)."""
    module_ids = np.array([i for i, n in enumerate(d.names) if n.startswith(MODULE_PREFIX)], dtype=np.int64)
    if not d.py or not len(module_ids):
        return None
    return _per_thread(d, thread, ts, at, _sorted_named(d.py, lambda names: np.isin(names, module_ids)), innermost)


def attribution(d: Collected, g: GpuEvents, calls: CpuCalls) -> Attribution:
    has = g.launch >= 0
    if not has.any():
        return Attribution([], [], 0.0, float(g.dur.sum()), "no GPU event matched a CPU launch call")
    li = g.launch[has]  # the moments: each launch call's thread and start
    thread = calls.thread[li]
    top = lambda key: top_level(d.ops, key) if key in d.ops else None  # noqa: E731
    op = _per_thread(d, thread, calls.ts, li, top, containing_top, EVENTS_AT)  # containing_top: a search per moment
    mod = modules_at(d, thread, calls.ts, li)
    del li, thread
    dur = g.dur[has]
    del has
    modules = _owners(d.names, mod, dur) if mod is not None else []
    del mod
    attributed = float(dur[op >= 0].sum())
    note = None if d.py else "no Python frames in this trace (recorded without with_stack): no module attribution"
    return Attribution(_owners(d.names, op, dur), modules, attributed, float(g.dur.sum()) - attributed, note)
