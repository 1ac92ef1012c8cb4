"""What one pass over a trace keeps (:class:`Collected`), in typed arrays and spill-aware columns,
and the ways the analyses read it: a block at a time, or whole. Gathered by collect.py's Collector.
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bridge_plugins.analysis.trace.spill import Spill, ThreadColumns, blocks, columns

if TYPE_CHECKING:  # imported where the columns are read back: a range worker never imports numpy
    import numpy as np


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
    read_on: int = 1  # processes that read it (split.py): more than one, and its analyses take two cores too

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
