"""Whether one trace is split over worker processes, and over how many: the default must never be
slower than one process (issue 32). Splitting pays only where the workers get cores of their own:
the reading process keeps inflating, cutting and merging, and on two cores (this process and one
worker's) it measured 0.82x to 1.07x of one process, depending on the trace's mix
(benchmarks/results/speed_mixes_cpu.txt, docs/scale.md). The decision, :func:`split_workers`, is
a pure function of the file's size, the cores free and what the first chunk holds.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from bridge_plugins.analysis.trace import chunked
from bridge_plugins.analysis.trace.cutting import blocks, chunks
from bridge_plugins.analysis.trace.header import header
from bridge_plugins.analysis.trace.records import Event, Record
from bridge_plugins.jobdir.regular_file import open_regular

MIN_SPLIT_BYTES = 2 << 20
"""A smaller file (on disk) is read in one process: starting the workers would cost more than they save."""
MIN_WORKERS = 2
"""Fewer workers than this never gain: the reading process's own share (inflate, cut, merge) then
takes as long as the one worker's."""
MAX_NAMES_PER_EVENT = 0.5
"""A first chunk with more distinct names than this per complete event is not split: the reading
process maps every name of every part, so the merge would cost about what the workers save."""
MODE_VARIABLE = "BRIDGE_PLUGINS_SPLIT"
"""``always`` splits whenever ``--jobs`` and the size allow (tests, and machines whose load
average misleads), ``never`` never does; unset or ``auto``: :func:`split_workers` decides."""


@dataclass(frozen=True)
class FirstChunk:
    """What the first chunk of events shows: how many complete events, how many distinct names
    among them, and whether it decoded as records (False: it goes to the dict path, read by the
    reading process itself)."""

    events: int
    names: int
    typed: bool = True


def free_cores(usable: int, load: float) -> float:
    """The cores left for workers beside this process: usable CPUs less the 1-minute load average
    (which counts other sessions' niced work: with autogroup scheduling, it competes as much) and
    less the one this process reads on."""
    return max(usable - load - 1.0, 0.0)


def split_workers(size: int, jobs: int, cores_free: float, first: FirstChunk | None, mode: str = "auto") -> int:
    """Worker processes to split a trace of ``size`` bytes over, at most ``jobs``; 1 means read it in
    one process. ``first`` None: not looked at yet (the caller then asks again with it, before
    splitting). ``mode``: see :data:`MODE_VARIABLE`."""
    if jobs < 2 or size < MIN_SPLIT_BYTES or mode == "never":
        return 1
    if mode == "always":
        return jobs
    workers = min(jobs, math.floor(cores_free))
    if workers < MIN_WORKERS:
        return 1
    if first is not None and (not first.typed or first.names > first.events * MAX_NAMES_PER_EVENT):
        return 1
    return workers


def first_chunk(path: Path) -> FirstChunk | None:
    """What the first chunk of ``path`` shows, read apart (a few ms); None where the file cannot be
    read so far: the read that follows says why."""
    try:
        with open_regular(path) as raw, chunked.open_stream(raw, path.name.endswith(".gz")) as fh:
            typed, records = _first_records(fh)
    except (chunked.Unreadable, chunked.NotFast, OSError, ValueError, EOFError, StopIteration):
        return None
    if not typed:
        return FirstChunk(0, 0, typed=False)
    events = [r for r in records if type(r) is Event]
    return FirstChunk(len(events), len({r.name for r in events}))


def _first_records(fh: chunked.ByteStream) -> tuple[bool, list]:
    """The first chunk's records, cut again (as chunked.read_events does) where a cut fell in a string."""
    _, rest, offset = header(blocks(fh))
    pieces = chunks(rest, offset, fh)
    extend = None
    while True:
        chunk, at, last = pieces.send(extend)
        try:
            return chunked.decode_chunk(chunk, chunked.typed_decoder(Record), at, last)
        except chunked.Truncated:
            extend = True


def plan(path: Path, size: int, jobs: int) -> int:
    """:func:`split_workers` for the file at ``path`` on this machine now."""
    mode = os.environ.get(MODE_VARIABLE, "auto")
    try:
        usable, load = len(os.sched_getaffinity(0)), os.getloadavg()[0]
    except (AttributeError, OSError):  # not Linux: the CPUs, with no load figure
        usable, load = os.cpu_count() or 1, 0.0
    cores = free_cores(usable, load)
    workers = split_workers(size, jobs, cores, None, mode)
    if workers > 1 and mode != "always":
        workers = split_workers(size, jobs, cores, first_chunk(path), mode)
    return workers
