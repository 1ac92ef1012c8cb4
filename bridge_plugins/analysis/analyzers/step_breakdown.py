"""Where each step's time goes: torch-tb-profiler 0.4.3's overview split, per step.

Each instant of a step goes to the first busy one of kernel, memcpy, memset, communication, runtime,
DataLoader, CPU exec; the rest is "Other". Steps are the ``ProfilerStep`` spans stretched to the GPU
work they launched, so the parts sum to ``step_us``. ``input_wait_us``: a DataLoader or data-iterator
span running while no GPU event does. Rules and where we differ: docs/analysis-schema.md."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from bridge_plugins.analysis.analyzers import step_windows
from bridge_plugins.analysis.analyzers.step_split import (
    ROLES,
    clipped,
    finite,
    groups,
    span_counts,
    split_step,
    split_steps,
    stacked,
)
from bridge_plugins.analysis.analyzers.step_windows import Spans, within
from bridge_plugins.analysis.analyzers.step_windows import union as _union
from bridge_plugins.analysis.figures import StepBreakdown, StepRow
from bridge_plugins.analysis.trace.collect import GPU_KERNEL, GPU_MEMCPY, GPU_MEMSET, GPU_OTHER, STEP_RE, Collected
from bridge_plugins.analysis.trace.gpu_events import EVENTS_AT, NEARLY_SORTED, CpuCalls, GpuEvents

COLLECTIVES = frozenset(
    f"{lib}:{op}"
    for lib in ("nccl", "gloo")
    for op in ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter")
)
DATALOADER_RE = re.compile(r"^enumerate\(DataLoader\)#.*\.__next__$|^enumerate\(DataPipe\)#")
DATA_ITERATOR_RE = re.compile(r"(^|: )(get_batch\w*|next\(data_iterator\))$")
"""Megatron-style input spans: ``get_batch`` (Megatron's, as a record_function or a Python frame
``file.py(12): get_batch``) and ``next(data_iterator)``."""


@dataclass(frozen=True)
class StepSplit:
    """One step's split and its input wait (see the module docstring), before per_step adds the rest."""

    breakdown: StepBreakdown
    input_wait_us: float
    input_span: str | None  # the input span that waited longest in the step


def _cpu_spans(d: Collected, keep: re.Pattern | frozenset | None, drop: re.Pattern | None, tables: tuple) -> Spans:
    """The union of the spans in ``tables`` whose names ``keep`` matches (None: all) and ``drop`` does not."""
    wanted = [
        i
        for i, n in enumerate(d.names)
        if (keep is None or (n in keep if isinstance(keep, frozenset) else keep.search(n)))
        and not (drop is not None and drop.search(n))
    ]
    ids = np.array(wanted, dtype=np.int64)
    every = len(wanted) == len(d.names)
    return step_windows.merged(lambda chunk: _spans(tables, None if every else ids, chunk))


def _spans(tables: tuple, ids: np.ndarray | None, chunk: int | None) -> Iterator[Spans]:
    """The (start, end) of the spans in ``tables`` with a name id in ``ids`` (None: all), ``chunk``
    at a time (step_windows.Blocks). In chunks the tables go last first: annotations hold the
    operators they name, so a union of both stays as small as the annotations' when they come first."""
    for table in reversed(tables) if chunk else tables:
        for key in table:
            for block in table.blocks(key):
                yield from _chunks(block, ids, chunk or max(len(block[0]), 1))
                del block  # not held while the next one is read


def _chunks(block: list[np.ndarray], ids: np.ndarray | None, chunk: int) -> Iterator[Spans]:
    ts, dur, name = block
    if not len(ts):
        yield ts, ts + dur
    for a in range(0, len(ts), chunk):
        t, d, n = (c[a : a + chunk] for c in (ts, dur, name))
        m = np.ones(len(t), dtype=bool) if ids is None else np.isin(n, ids)
        yield t[m], t[m] + d[m]


def _tb_steps(
    d: Collected, g: GpuEvents, calls: CpuCalls, gpu_roles: GpuRoles
) -> tuple[list[int], np.ndarray, np.ndarray]:
    """The steps (numbers, starts, ends) as the plugin stretches them to their GPU work."""
    numbers = sorted(d.steps, key=lambda n: d.step_ts[n])
    starts = np.array([d.step_ts[n] for n in numbers], dtype=np.float64)
    ends = starts + np.array([d.steps[n] for n in numbers], dtype=np.float64)
    if not numbers or not bool((g.launch >= 0).any()):
        return numbers, starts, ends
    device = _device_spans(g, calls, starts, ends)
    if device is None:
        return numbers, starts, ends
    dev_start, dev_end = device
    prev = starts[0]
    if np.isfinite(dev_start[0]):  # GPU work that ended before step 0's began (launched before it)
        last = gpu_roles.last_end_before(g, dev_start[0])
        prev = max(prev, last) if last is not None else prev
    new_starts, new_ends = starts.copy(), ends.copy()
    for i in range(len(numbers)):
        start = max(prev, starts[i])
        end = max(ends[i], dev_end[i]) if np.isfinite(dev_end[i]) else max(ends[i], start)
        new_starts[i], new_ends[i] = start, max(end, start)
        prev = new_ends[i]
    return numbers, new_starts, new_ends


def _device_spans(g: GpuEvents, calls: CpuCalls, starts: np.ndarray, ends: np.ndarray) -> Spans | None:
    """Per step, the first start and last end of the GPU work launched inside its CPU span (inf and
    -inf: none), ``EVENTS_AT`` GPU events at a time (a few columns of every event at once took 70 MB
    on a 3 GB trace); None where no launch is inside a step."""
    dev_start, dev_end = np.full(len(starts), np.inf), np.full(len(starts), -np.inf)
    found = False
    for a in range(0, len(g.launch), EVENTS_AT):
        part = slice(a, a + EVENTS_AT)
        launch = g.launch[part]
        has = launch >= 0
        call = launch[has]
        c_start = calls.ts[call]
        k = np.searchsorted(starts, c_start, side="right") - 1  # the step whose CPU span holds the call
        inside = (k >= 0) & (c_start + calls.dur[call] <= ends[np.maximum(k, 0)])
        if not inside.any():
            continue
        found = True
        g_start = g.ts[part][has][inside]
        np.maximum.at(dev_end, k[inside], g.dur[part][has][inside] + g_start)  # dur + ts, as GpuEvents.spans
        np.minimum.at(dev_start, k[inside], g_start)
    return (dev_start, dev_end) if found else None


@dataclass
class GpuRoles:
    """Every kernel, memcpy and memset, whatever launched them: the plugin counts GPU events whose
    launch is not in the trace too (HTA's filter, and so ``GpuEvents``, leaves them out)."""

    unions: list[Spans]  # of the kernels, the memcpys and the memsets
    unkept_ends: np.ndarray  # the ends of those ``GpuEvents`` leaves out, sorted

    def last_end_before(self, g: GpuEvents, t: float) -> float | None:
        """The latest end before ``t`` of any kernel, memcpy or memset (None: none), from ``g`` (the
        kept ones, ``EVENTS_AT`` at a time) and the others' ends: not every end held sorted for one
        search (16 MB on a 3 GB trace, issue 32)."""
        i = int(np.searchsorted(self.unkept_ends, t)) - 1
        last = float(self.unkept_ends[i]) if i >= 0 else None
        for a in range(0, len(g.ts), EVENTS_AT):
            ends = g.dur[a : a + EVENTS_AT] + g.ts[a : a + EVENTS_AT]  # as GpuEvents.spans
            ends = ends[(ends < t) & (g.cat[a : a + EVENTS_AT] != GPU_OTHER)]
            if len(ends):
                top = float(ends.max())
                last = top if last is None or top > last else last
        return last


def gpu_role_spans(d: Collected, keep: np.ndarray) -> GpuRoles:
    """:class:`GpuRoles` from the collector's columns, before ``gpu_events.joined`` takes them
    (``keep``: the events it keeps, gpu_breakdown.kept_gpu_events)."""
    if not len(d.gpu_ts):
        return GpuRoles([_union([], [])] * 3, np.zeros(0))
    ts, dur = np.frombuffer(d.gpu_ts, np.float64), np.frombuffer(d.gpu_dur, np.float64)
    cat = np.frombuffer(d.gpu_cat, np.int8)
    unions = [role_union(ts, dur, _where(cat, (c,))) for c in (GPU_KERNEL, GPU_MEMCPY, GPU_MEMSET)]
    device = _where(cat, (GPU_KERNEL, GPU_MEMCPY, GPU_MEMSET), ~keep)
    ends = np.empty(len(device))
    for a in range(0, len(device), EVENTS_AT):
        i = device[a : a + EVENTS_AT]
        ends[a : a + EVENTS_AT] = ts[i] + dur[i]
    del device
    ends.sort(kind=NEARLY_SORTED)  # in place: np.sort's algorithm without its copy
    return GpuRoles(unions, ends)


def _where(cat: np.ndarray, codes: tuple[int, ...], among: np.ndarray | None = None) -> np.ndarray:
    """The positions of the events of those categories (int32 where it fits), ``EVENTS_AT`` at a
    time; only those in the mask ``among`` where given."""
    dtype = np.int32 if len(cat) < 2**31 else np.int64
    parts = [
        np.flatnonzero(
            np.isin(cat[a : a + EVENTS_AT], codes) & (True if among is None else among[a : a + EVENTS_AT])
        ).astype(dtype)
        + a
        for a in range(0, len(cat), EVENTS_AT)
    ]
    return np.concatenate([np.zeros(0, dtype), *parts])


def role_union(ts: np.ndarray, dur: np.ndarray, at: np.ndarray, events_at: int = EVENTS_AT) -> Spans:
    """``step_windows.union([ts[at]], [ts[at] + dur[at]])`` to the bit, without its copies of every
    column (issue 32: 90 MB more on a 3 GB trace): the starts sorted once, the ends taken and their
    running maximum carried ``events_at`` at a time."""
    if not len(at):
        return _union([], [])
    s = ts[at]
    order = np.argsort(s, kind="stable")
    s = s[order]
    at = at[order]
    del order
    e = np.empty(len(at))
    carry = -np.inf
    for a in range(0, len(at), events_at):
        i = at[a : a + events_at]
        part = e[a : a + len(i)]
        np.maximum.accumulate(ts[i] + dur[i], out=part)
        np.maximum(part, carry, out=part)  # the running maximum of every earlier end too
        carry = part[-1]
    del at
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    np.greater(s[1:], e[:-1], out=new[1:])
    s = s[new]
    new[:-1] = new[1:]
    new[-1] = True  # now: the last of each run
    return s, e[new]


def step_splits(d: Collected, g: GpuEvents, calls: CpuCalls, gpu_roles: GpuRoles) -> dict[int, StepSplit]:
    """ProfilerStep number -> its breakdown and input wait (module docstring); ``gpu_roles`` from
    :func:`gpu_role_spans`."""
    numbers, starts, ends = _tb_steps(d, g, calls, gpu_roles)
    if not numbers:
        return {}
    tables = (d.ops, d.annotations)
    before = [*gpu_roles.unions, _cpu_spans(d, COLLECTIVES, None, tables)]  # the roles before runtime
    not_exec = re.compile(f"{STEP_RE.pattern}|{DATALOADER_RE.pattern}")
    after = [_cpu_spans(d, DATALOADER_RE, None, tables), _cpu_spans(d, None, not_exec, tables)]
    inputs = _cpu_spans(d, re.compile(f"{DATALOADER_RE.pattern}|{DATA_ITERATOR_RE.pattern}"), None, (*tables, d.py))
    # the runtime calls' union (as many spans as calls) a window of steps at a time: step_windows
    runtime = step_windows.per_step(lambda chunk: _spans((d.runtime,), None, chunk), starts, ends)
    sums = np.zeros((len(numbers), len(ROLES) + 1))
    wait = np.zeros(len(numbers))
    for a, in_runtime in groups(runtime, span_counts([*before, *after, inputs], starts, ends)):
        lo, hi = starts[a : a + len(in_runtime)], ends[a : a + len(in_runtime)]
        mine = [*(clipped(u, lo, hi) for u in before), stacked(in_runtime), *(clipped(u, lo, hi) for u in after)]
        waits = clipped(inputs, lo, hi)
        if finite(lo, hi, *mine, waits):
            sums[a : a + len(lo)], wait[a : a + len(lo)] = split_steps(lo, hi, mine, waits)
            continue
        for k in range(len(lo)):  # NaN or infinite times: each step on its own, as they always were
            of_k = [(s[kk == k], e[kk == k]) for s, e, kk in mine]
            sums[a + k], wait[a + k] = split_step(float(lo[k]), float(hi[k]), of_k, within(inputs, lo[k], hi[k]))
    names = _longest_input(d, inputs, starts, ends) if wait.any() else [None] * len(numbers)
    out: dict[int, StepSplit] = {}
    for i, n in enumerate(numbers):
        parts = {f"{r}_us": float(sums[i, j]) for j, r in enumerate(ROLES)}
        b = StepBreakdown(step_us=float(ends[i] - starts[i]), other_us=float(sums[i, -1]), **parts)
        out[n] = StepSplit(breakdown=b, input_wait_us=float(wait[i]), input_span=names[i])
    return out


def _longest_input(d: Collected, inputs: Spans, starts: np.ndarray, ends: np.ndarray) -> list[str | None]:
    """Per step, the name of the input span (DataLoader or data iterator) with the most time in it."""
    pattern = re.compile(f"{DATALOADER_RE.pattern}|{DATA_ITERATOR_RE.pattern}")
    ids = {i: n for i, n in enumerate(d.names) if pattern.search(n)}
    best: list[tuple[float, str | None]] = [(0.0, None)] * len(starts)
    for table in (d.ops, d.annotations, d.py):
        for key in table:
            for ts, dur, name in table.blocks(key):
                for j in np.flatnonzero(np.isin(name, list(ids))).tolist():
                    k = int(np.searchsorted(starts, ts[j], side="right")) - 1
                    if k >= 0 and ts[j] < ends[k] and dur[j] > best[k][0]:
                        best[k] = (float(dur[j]), ids[int(name[j])])
    return [name for _, name in best]


GPU_PARTS = ("kernel", "memcpy", "memset", "runtime")
"""The parts a CPU-only trace has no use for (always 0 there): renderers leave them out."""


def parts_of(b: StepBreakdown) -> dict[str, float]:
    """A step's breakdown as ``{"<part>_us": us}`` (``step_us`` included), in the JSON's order."""
    return {f.name: getattr(b, f.name) for f in dataclasses.fields(b)}


def mean_breakdown(per_step: list[StepRow]) -> dict[str, float] | None:
    """The steps' breakdowns averaged, part by part (``step_us`` included); None without steps."""
    rows = [parts_of(p.breakdown) for p in per_step if p.breakdown]
    if not rows:
        return None
    return {k: sum(r[k] for r in rows) / len(rows) for k in rows[0]}
