"""Whether one trace is split over processes, which way, and over how many: the default must never
be slower than one process (issue 32). In byte ranges (:func:`range_workers`, :func:`range_bounds`)
every process reads the file itself, so a core free half the time already gains. Chunk by chunk
(:func:`split_workers`) the reading process inflates, cuts and merges for all, which pays only where
the workers get cores of their own (0.82x to 1.07x of one process on two cores: docs/scale.md).
Both are pure functions of the size, the cores free (measured: :func:`_cores_free`) and, chunk by
chunk, what the first chunk holds.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from bridge_plugins.analysis import cpu_idle
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
misleads): in ranges up to RANGE_MAX_BYTES, else chunk by chunk; ``chunks`` always chunk by chunk;
``never`` never splits; unset or ``auto``: :func:`range_workers`, then :func:`split_workers` decide."""


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
    if mode in ("always", "chunks"):
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


RANGE_MAX_BYTES = 768 << 20
"""A trace with more JSON than this is not read in ranges: a range worker holds its part whole
(it cannot spill: its files would not cross to the reading process), about 30 bytes a kept event."""


def range_workers(size: int, total: int | None, jobs: int, cores_free: float, mode: str = "auto") -> int:
    """The ranges (processes, this one included) to read a trace of ``size`` bytes on disk and
    ``total`` bytes of JSON in (None: not known); 1: read it another way (:func:`split_workers`)."""
    if total is None or jobs < 2 or size < MIN_SPLIT_BYTES or total > RANGE_MAX_BYTES or mode in ("never", "chunks"):
        return 1
    if mode == "always":
        return jobs
    return max(1, min(jobs, 1 + math.floor(cores_free + RANGE_SLACK)))


RANGE_SLACK = 0.5
"""A range worker costs little beside its share (the bytes before its range inflated, its part
merged): a core free for more than half its time already gains."""


PREFIX_COST = 0.15
"""What inflating and cutting a byte before a range costs its worker, against reading one in it
(ISA-L inflates ~2.6 GB/s; decoding and collecting run at ~0.3 GB/s): later ranges are shorter."""


def range_bounds(total: int, ranges: int, head_start: int = 0) -> list[int]:
    """Where each range starts in ``total`` bytes of JSON, so that each process has as much to do:
    the one that starts at s and ends at e has ``PREFIX_COST * s + (e - s)``, and the first (this
    process's) ``head_start`` bytes' worth less, where the workers started before it could begin
    (:data:`HEAD_START_BYTES`); at most as much less as leaves it ``total / (2 * ranges)``."""
    a = PREFIX_COST
    rest = (1 - a) ** (ranges - 1)
    grows = (1 - rest) / a  # sum of (1 - a) ** k for k < ranges - 1: how the head start adds up
    lead = min(head_start, total * (1 - (rest + grows) / (2 * ranges)) / grows) if grows else 0.0
    first = (total - lead * grows) / (rest + grows)  # this process's range: each worker's is worth
    starts, at = [0], first  # first + lead
    for _ in range(ranges - 1):
        starts.append(round(at))
        at = first + lead + at * (1 - a)
    return starts


HEAD_START_BYTES = 28 << 20
"""What the workers of a read started ahead (read_ranges.reading_ahead) gain on this process, in
bytes of JSON: they start ~0.1 s before it begins its range (it still imports numpy, the analyses
and the renderer; ~0.3 GB/s of JSON read here: both scale with the CPU), less what sending a part
back costs them (part_file.py: ~7 ms). Measured on a 263 MB trace, this process's range ended
after the worker's by +0.03 s (mean of 5) at 16 MiB, +0.01 s at 28 MiB and -0.002 s at 40 MiB;
it should end as the part arrives, ~7 ms after (its spread: 0.05 s either way). With the native
reader (twice as fast, and so is what the imports are worth in bytes; the prefix's share grows
alike), at 28 MiB: +0.016 s on job128's mix, +0.001 s on job2's (median of 8 each)."""


def json_bytes(path: Path, size: int) -> int | None:
    """The bytes of JSON in the file at ``path`` (``size`` bytes on disk): its size, or for gzip
    what its trailer says (the size modulo 2**32: a range worker that finds the file longer gives
    up); None where that is less than half the file (no JSON compresses so badly: not the size),
    or the file cannot be read."""
    if not path.name.endswith(".gz"):
        return size
    try:
        with open_regular(path) as raw:
            raw.seek(-4, os.SEEK_END)
            total = int.from_bytes(raw.read(4), "little")
    except (OSError, ValueError):
        return None
    return total if 2 * total >= size else None


def plan_ranges(path: Path, size: int, jobs: int, measured: bool = False) -> tuple[int, int]:
    """(:func:`range_workers` for the file at ``path`` on this machine now, its bytes of JSON).
    ``measured``: no core free where the idle ticks since the command started are too few to tell
    (a read started ahead, early: the plan made later, with more of them, decides)."""
    total = json_bytes(path, size) if jobs > 1 else None
    cores = (_idle_since_start() or 0.0) if measured else _cores_free()
    return range_workers(size, total, jobs, cores, os.environ.get(MODE_VARIABLE, "auto")), total or 0


MIN_TICKS = 5
"""Fewer ticks than this between the two samples (a tick: 10 ms of a CPU) say too little: the load
average decides instead. 5: 25 ms of 2 CPUs; a command here has 5-11 between its first sample and
a lone trace's early plan (read_ranges.py). A tick is then at most a fifth of the figure, enough to
tell a core left idle from one kept busy: 16 early plans beside one CPU hog measured 0.0 each,
10 on this machine idle 0.89-1.14."""


def idle_cores(usable: int, before: tuple[int, int] | None, now: tuple[int, int] | None) -> float | None:
    """The cores idle between two samples of :func:`cpu_idle.cpu_ticks`: this process was busy then
    (starting, importing), so what was idle is free beside it; at most ``usable - 1``, where this
    process waited (a read, a page fault) and every CPU looked idle: one is its own to read on.
    None where they say too little."""
    if before is None or now is None or now[1] - before[1] < MIN_TICKS:
        return None
    return min(usable - 1.0, usable * (now[0] - before[0]) / (now[1] - before[1]))


def _usable_and_load() -> tuple[int, float]:
    try:
        return len(os.sched_getaffinity(0)), os.getloadavg()[0]
    except (AttributeError, OSError):  # not Linux: the CPUs, with no load figure
        return os.cpu_count() or 1, 0.0


def _idle_since_start() -> float | None:
    """The cores idle since the process started (cpu_idle.py's first sample); None where the
    ticks are too few to tell."""
    return idle_cores(_usable_and_load()[0], cpu_idle.STARTED, cpu_idle.ticks_now())


def _cores_free() -> float:
    """The cores free beside this process: :func:`_idle_since_start` where there are ticks enough,
    else the load average's figure (which lags by a minute: a benchmark's own last runs count in it)."""
    idle = _idle_since_start()
    return free_cores(*_usable_and_load()) if idle is None else idle


def plan(path: Path, size: int, jobs: int) -> int:
    """:func:`split_workers` for the file at ``path`` on this machine now."""
    mode = os.environ.get(MODE_VARIABLE, "auto")
    cores = _cores_free()
    workers = split_workers(size, jobs, cores, None, mode)
    if workers > 1 and mode not in ("always", "chunks"):
        workers = split_workers(size, jobs, cores, first_chunk(path), mode)
    return workers
