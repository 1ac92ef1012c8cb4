"""Merging one chunk's part (what a fresh Collector gathered from it in a worker) into the reading
process's Collector, as if that collector had read the chunk: names and threads registered in the
order one pass meets them, each column appended and spilled where the collector would spill it.
Where that needs the order of the chunk's events, which a part does not keep, :func:`merge` says
False and leaves the collector as it was (docs/scale.md, "One big trace on every core").
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from functools import partial
from itertools import repeat
from typing import TYPE_CHECKING

from bridge_plugins.analysis.trace import collect
from bridge_plugins.analysis.trace.collect import Collected, Collector
from bridge_plugins.analysis.trace.kernel_types import kernel_type
from bridge_plugins.analysis.trace.spill import Spill

if TYPE_CHECKING:  # imported where a part is merged: a range worker never imports numpy
    import numpy as np

_GPU = ("gpu_name", "gpu_ts", "gpu_dur", "gpu_corr", "gpu_stream", "gpu_cat")
TABLES = tuple(table for table, _ in collect.TABLE_CATEGORIES)
"""The collector's per-thread tables (``Collected`` fields), merged part by part."""


def _raw(column: array) -> memoryview:
    """A part's column as bytes, without a copy: an ``array``, or a numpy view of a memory file
    (part_file.loads), which ``array.frombytes`` takes only so."""
    return memoryview(column).cast("B")


def _remap(ids: array, mapping: np.ndarray) -> bytes:
    import numpy as np

    return mapping[np.frombuffer(ids, dtype=np.int32)].tobytes() if len(ids) else b""


def _used(columns: list[array], n: int) -> np.ndarray:
    """Which of the part's ``n`` local name ids appear in ``columns``."""
    import numpy as np

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
    import numpy as np

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
        kinds: set[str | None] = {kernel_type(names[i]) for i in gpu_past}
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
    import numpy as np

    kinds = [p.name_types.get(base + k) for k in range(len(p.names))]  # a CPU entry has no type
    assert len(c._ids) == base  # the names were full when written: none was added since
    if len(set(kinds) - c._shared.keys()) > 1:
        return None
    mapping = np.arange(base + len(kinds), dtype=np.int32)
    for k, kind in enumerate(kinds):
        mapping[base + k] = c._shared_entry(kind)
    return mapping


def merge(
    c: Collector, p: Collected, frozen_base: int | None = None, marks: dict[tuple, list[int]] | None = None
) -> bool:
    """Add one chunk's part to ``c`` as if ``c`` had read the chunk; False (``c`` unchanged) where
    that needs the order of the chunk's events, which the part does not keep: past the cap on
    threads (they then share one entry, their events interleaved) or on steps, or past the cap on
    names where the part needs two new shared entries (see :func:`_name_maps`). ``frozen_base``:
    a part gathered with ``c``'s names (:func:`part_of`), the id of its first shared entry.
    ``marks``: a part of many chunks (a range worker's, ``Collector.marks``), spilled here where
    one pass would have spilled it."""
    import numpy as np

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
        getattr(d, field).frombytes(_raw(getattr(p, field)))
    d.gpu_count = len(d.gpu_ts)
    if len(p.mem_index):
        d.mem_index.frombytes((np.frombuffer(p.mem_index, dtype=np.int64) + base).tobytes())
        d.mem_bytes.frombytes(_raw(p.mem_bytes))
        d.mem_bw.frombytes(_raw(p.mem_bw))
    if len(p.cpu_corr):
        sources: tuple[array | bytes, ...] = (p.cpu_corr, p.cpu_corr_ts, p.cpu_corr_dur)
        sources += (_remap(p.cpu_corr_name, names), _remap(p.cpu_corr_thread, threads))
        _append(d._cpu_tail(), sources, _cuts(marks, collect.CPU_GROUP, len(p.cpu_corr)), partial(_spill_cpu, d))
    for table_name in TABLES:
        table, local = getattr(d, table_name), getattr(p, table_name)
        for key, (ts, dur, ids) in local.tails.items():
            cuts = _cuts(marks, (table_name, key), len(ts))
            _append(table.tail(key), (ts, dur, _remap(ids, names)), cuts, partial(table.spill, key))
    _merge_steps(d, p)
    return True


def _cuts(marks: dict[tuple, list[int]] | None, group: tuple, n: int) -> list[int]:
    """Where one pass flushed the group's ``n`` elements: after each chunk of a range part
    (``marks``), or once, after a chunk's part."""
    return [n] if marks is None else marks[group]


def _append(
    tail: tuple[array, ...], sources: tuple[array | bytes, ...], cuts: list[int], spill: Callable[[], None]
) -> None:
    """The part's columns ``sources`` onto ``tail`` a flush at a time (``cuts``: the lengths after
    each), spilling after any flush that brings it to SPILL_AT, as the collector's flush does: the
    same blocks."""
    views = [memoryview(s).cast("B") for s in sources]
    at = 0
    for n in cuts:
        for column, view in zip(tail, views, strict=True):
            column.frombytes(view[at * column.itemsize : n * column.itemsize])
        at = n
        if len(tail[0]) >= collect.SPILL_AT:
            spill()


def _spill_cpu(d: Collected) -> None:
    d.cpu_corr_spilled = d.cpu_corr_spilled or Spill()
    d.cpu_corr_spilled.write(d._cpu_tail())


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
