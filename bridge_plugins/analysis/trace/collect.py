"""One pass over a trace's events, keeping only the few numbers each analysis needs, compactly.

Why a collector: the trace is streamed once (see trace_reader), so everything the figures need
is gathered in that pass into typed arrays (about 30 bytes per kept event instead of a dict of
~1 KB), and computed at the end with numpy.

Which events are GPU events follows HolisticTraceAnalysis (HTA) so our breakdown agrees with
its ``get_temporal_breakdown``: a complete event (``ph: X``, with ``dur``) whose ``args`` carry a
``stream >= 0`` and a ``correlation >= 0``. Every other complete event is CPU side; those with a
correlation (the ``cuda_runtime`` launches) are what GPU events are matched against.
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass, field

STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
_INT64_LIMIT = 2**63
_NUMBER = (int, float)
_GPU_SYNC_NAMES = ("Event Sync", "Context Sync")  # device-side waits: HTA counts them as neither side


def _int(value, default: int = -1) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _hashable(value):
    """A pid/tid as a dict key: Kineto writes ints or strings; a list or object from a hand-edited
    or foreign trace becomes its text rather than a TypeError."""
    return value if value is None or isinstance(value, (int, float, str)) else str(value)


@dataclass
class Collected:
    """What one trace holds, gathered by :class:`Collector`."""

    header: dict = field(default_factory=dict)
    events: int = 0
    names: list[str] = field(default_factory=list)
    steps: dict[int, float] = field(default_factory=dict)  # ProfilerStep number -> duration (us)
    step_starts: dict[int, float] = field(default_factory=dict)  # ProfilerStep number -> its ts (us)
    profiler_step_names: set = field(default_factory=set)  # every name containing ProfilerStep (HTA's test)
    last_profiler_step_end: float | None = None
    gpu_ts: array = field(default_factory=lambda: array("d"))
    gpu_dur: array = field(default_factory=lambda: array("d"))
    gpu_name: array = field(default_factory=lambda: array("l"))
    gpu_corr: array = field(default_factory=lambda: array("q"))
    cpu_corr: array = field(default_factory=lambda: array("q"))
    cpu_corr_ts: array = field(default_factory=lambda: array("d"))
    # CPU operators per thread: (pid, tid) -> (ts, dur, name id) arrays, for self time
    ops: dict[tuple, tuple[array, array, array]] = field(default_factory=dict)


class Collector:
    """Feed it with :func:`trace_reader.read_trace` (``on_header``/``on_event``); read ``.data``."""

    def __init__(self) -> None:
        self.data = Collected()
        self._ids: dict[str, int] = {}

    def on_header(self, header: dict) -> None:
        self.data, self._ids = Collected(header=header if isinstance(header, dict) else {}), {}

    def _id(self, name: str) -> int:
        i = self._ids.get(name)
        if i is None:
            i = self._ids[name] = len(self.data.names)
            self.data.names.append(name)
        return i

    def on_event(self, e: dict) -> None:
        """Called for every event of a big file: written for speed (one dict lookup per field)."""
        d = self.data
        d.events += 1
        if e.get("ph") != "X":
            return
        cat, ts, dur = e.get("cat"), e.get("ts"), e.get("dur")
        if cat is None or cat == "Trace" or type(ts) not in _NUMBER or type(dur) not in _NUMBER:
            return
        try:
            ts, dur = float(ts), float(dur)
        except OverflowError:  # past float range: not a real event (checked before any append)
            return
        name = e.get("name")
        if type(name) is not str:
            name = "" if name is None else str(name)
        args = e.get("args")
        if type(args) is not dict:
            args = {}
        corr = args.get("correlation", -1)
        if type(corr) is not int:
            corr = _int(corr)
        if corr >= _INT64_LIMIT:
            return  # no launch has such an id, and it would not fit the arrays
        if corr >= 0:
            stream = args.get("stream", -1)
            if (stream if type(stream) is int else _int(stream)) >= 0:
                i = self._ids.get(name)
                d.gpu_name.append(self._id(name) if i is None else i)
                d.gpu_ts.append(ts)
                d.gpu_dur.append(dur)
                d.gpu_corr.append(corr)
                return
            if name in _GPU_SYNC_NAMES:
                return
            d.cpu_corr.append(corr)
            d.cpu_corr_ts.append(ts)
        if "ProfilerStep" in name:
            self._profiler_step(name, cat, ts, dur)
        if cat == "cpu_op":
            key = (_hashable(e.get("pid")), _hashable(e.get("tid")))
            arrays = d.ops.get(key)
            if arrays is None:
                arrays = d.ops[key] = (array("d"), array("d"), array("l"))
            i = self._ids.get(name)
            arrays[2].append(self._id(name) if i is None else i)
            arrays[0].append(ts)
            arrays[1].append(dur)

    def _profiler_step(self, name: str, cat, ts: float, dur: float) -> None:
        d = self.data
        d.profiler_step_names.add(name)
        if d.last_profiler_step_end is None or ts + dur > d.last_profiler_step_end:
            d.last_profiler_step_end = ts + dur
        m = STEP_RE.match(name)
        if m and cat == "user_annotation":
            n = int(m.group(1))
            longest = max(dur, d.steps.get(n, 0.0))
            if n not in d.step_starts or dur == longest:  # where the longest span of that number starts
                d.step_starts[n] = ts
            d.steps[n] = longest
