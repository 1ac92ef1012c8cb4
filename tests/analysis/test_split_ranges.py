"""One trace read in ranges (trace/read_ranges.py): this process reads the first range,
each worker reads the file itself and gathers its own range into one part, merged here in file
order. It must collect exactly what one process does, spill blocks included (a float sum per
block depends on them), and fail with the same error.

The merge of range parts is checked in-process on random events, cuts and ranges (hypothesis); the
whole read on the real GPU fixtures and the hostile traces, in many chunks. A read that quietly
fell back to one process would pass every equality, so each test also asserts which way the file
was read (``rereads``) and that the range parts were merged (``range_merges``). The hostile
battery, and an error in the last quarter of a file, are read both ways in test_split.py.
"""

from __future__ import annotations

import contextlib
import gzip
import multiprocessing
import os
import re
import select
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bridge_plugins.analysis.parallel import Workers
from bridge_plugins.analysis.trace import (
    chunked,
    collect,
    cutting,
    part_file,
    range_runs,
    read_ranges,
    split,
    split_plan,
    split_worker,
)
from bridge_plugins.analysis.trace.collect import Collector
from bridge_plugins.analysis.trace.header import header
from bridge_plugins.analysis.trace.reader import TraceError
from bridge_plugins.analysis.trace.split import collect_trace, merge
from tests.analysis.collected_state import dump
from tests.analysis.event_strategies import FIXTURES, events
from tests.analysis.hostile_inputs import JOB2

ROOT = Path(__file__).resolve().parents[2]


def _blocks(d: collect.Collected) -> list:
    """Where each spilled group was cut into blocks, and what its tail still holds."""
    groups = [("cpu", d.cpu_corr_spilled, d.cpu_corr)]
    groups += [
        (f"{t}{k!r}", getattr(d, t).spilled.get(k), getattr(d, t).tails[k][0])
        for t in split.TABLES
        for k in getattr(d, t).tails
    ]
    return [(name, s._blocks if s else None, len(tail)) for name, s, tail in groups]


def _range_part(pieces: list[list]) -> tuple[collect.Collected, dict]:
    """What a range worker gathers from its chunks: never spilling, noting where it would have."""
    c = Collector()
    c.marks = {}
    c.on_header({})  # as a range's stream starts the file: the marks stay on
    for piece in pieces:
        c.on_records(piece)
    return c.data, c.marks


_RUN = [collect.Event("cpu_op", "a", 1, 1, float(i), 1.0) for i in range(5)]


@settings(max_examples=400, deadline=None)
@example([_RUN] * 4, [1], 2)  # a range of 3 chunks, each flush past SPILL_AT: 3 blocks, not 1
@given(
    st.lists(st.lists(events(), max_size=12), max_size=8),
    st.lists(st.integers(0, 8), max_size=3),
    st.sampled_from([2, 3, 5, 10**6]),
)
def test_range_parts_merged_are_what_one_collector_gathers(pieces, range_starts, spill_at):
    """Chunks (``pieces``) grouped into ranges; the first read by ``c`` itself, each other
    gathered apart (as a worker gathers it) and merged with its marks == one collector fed every
    chunk, spill blocks included."""
    starts = sorted({0, *(min(s, len(pieces)) for s in range_starts)})
    ranges = [pieces[a:b] for a, b in zip(starts, [*starts[1:], len(pieces)], strict=True)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(collect, "SPILL_AT", spill_at)
        parts = [_range_part(r) for r in ranges[1:]]
        one = Collector()
        for piece in pieces:
            one.on_records(piece)
        c = Collector()
        for piece in ranges[0]:
            c.on_records(piece)
        for part, marks in parts:
            assert merge(c, part, marks=marks)
        assert _blocks(c.data) == _blocks(one.data)
        assert dump(c.data) == dump(one.data)


def test_a_range_worker_spills_nothing_and_marks_each_flush():
    """The marks are each group's length after every flush that added to it."""
    ev = [collect.Event("cpu_op", "a", 1, 1, 0.0, 1.0), collect.Event("cpu_op", "b", 1, 2, 1.0, 1.0)]
    launch = collect.Event("cuda_runtime", "cudaLaunchKernel", 1, 1, 2.0, 1.0, collect.Args(-1, 7))
    part, marks = _range_part([ev, [ev[0], launch], [launch] * 3])
    assert marks == {
        ("ops", (1, 1)): [1, 2],
        ("ops", (1, 2)): [1],
        collect.CPU_GROUP: [1, 4],
        ("runtime", (1, 1)): [1, 4],
    }
    assert part.cpu_corr_spilled is None and not part.ops.spilled and not part.runtime.spilled


def _identity(path: Path) -> tuple:
    with open(path, "rb") as fh:
        return split_worker.file_identity(fh)


def _chunk_starts(path: Path) -> list[int]:
    """Where one pass's chunks of ``path`` (plain JSON) start."""
    with open(path, "rb") as fh:
        head, rest, offset = header(cutting.blocks(fh))
        return [at for _, at, _ in cutting.chunks(rest, offset, fh)]


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("name", ["rank0.json", "rank0.json.gz"])
def test_three_ranges_gathered_by_the_workers_unit_are_one_pass(tmp_path, monkeypatch, name, shared):
    """The worker's unit, called here, for the second and third of three ranges that start exactly
    where chunks start (a chunk belongs to the range it starts in: none lost, none read twice),
    merged after this process's read of the first == one pass. Plain and gzip (stored); each part
    through the pipe's pickle, or through a memory file (part_file.py)."""
    monkeypatch.setattr(cutting, "BLOCK_BYTES", 1 << 16)
    monkeypatch.setattr(collect, "SPILL_AT", 1000)
    plain = tmp_path / "rank0.json"
    plain.write_bytes(gzip.decompress(JOB2.read_bytes()))
    starts = _chunk_starts(plain)
    lo, hi, size = starts[len(starts) // 3], starts[2 * len(starts) // 3], plain.stat().st_size
    path = tmp_path / name
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(plain.read_bytes(), compresslevel=0))
    ident = _identity(path)
    fds = [part_file.new_file() if shared else -1 for _ in range(2)]
    parts = [
        split_worker.collect_range(str(path), a, b, size, ident, fd)
        for (a, b), fd in zip(((lo, hi), (hi, None)), fds, strict=True)
    ]
    assert [kind for kind, _ in parts] == ["shared" if shared else "part"] * 2
    if shared:
        parts = [("part", part_file.loads(data, fd)) for (_, data), fd in zip(parts, fds, strict=True)]
        for fd in fds:
            os.close(fd)
    c = Collector()
    with open(path, "rb") as raw, chunked.open_stream(raw, name.endswith(".gz"), 0) as fh:
        s = range_runs.Stream(fh)
        c.on_header(s.head)
        assert s.read(c, 0, lo)
    one = collect_trace(path, 1)
    for (_, runs), at in zip(parts, (lo, hi), strict=True):
        [(start, part, marks)] = runs  # no pieces to claim: one run, its own range
        assert start == at and 0 < part.events < one.events // 2  # its range only
        assert merge(c, part, marks=marks)
    assert (dump(c.data), _blocks(c.data)) == (dump(one), _blocks(one))


def test_a_range_read_inflates_straight_into_the_cutters_buffer():
    """A read in ranges inflates each block into the buffer it is cut in: no block-sized ``bytes``
    made and copied per read (a ``GzipFile``'s ``readinto`` did that: ~1.5 % of a split read's CPU)."""
    import tracemalloc

    buf = bytearray(1 << 20)
    with open(JOB2, "rb") as raw, chunked.open_stream(raw, True, 0) as fh:
        fh.readinto(memoryview(buf))  # the reader's own buffers are made on its first read
        tracemalloc.start()
        try:
            got = fh.readinto(memoryview(buf))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert got == len(buf) and buf == gzip.decompress(JOB2.read_bytes())[1 << 20 : 2 << 20]
    assert peak < 64 << 10  # a block-sized bytes: 1 MiB


def test_a_range_worker_says_why_it_cannot_gather_its_range(tmp_path, monkeypatch):
    """Another file at the path, a file longer than planned, a cap reached in the range."""
    path = tmp_path / "rank0.json"
    path.write_bytes(gzip.decompress(JOB2.read_bytes()))
    size, ident = path.stat().st_size, _identity(path)
    assert split_worker.collect_range(str(path), size // 2, None, size, ident)[0] == "part"
    assert split_worker.collect_range(str(path), size // 2, None, size, (*ident[:3], ident[3] + 1)) == ("cut", None)
    assert split_worker.collect_range(str(path), size // 2, None, size // 2, ident) == ("cut", None)
    monkeypatch.setattr(collect, "MAX_THREADS", 1)
    assert split_worker.collect_range(str(path), size // 2, None, size, ident) == ("cut", None)


def test_a_range_worker_reports_an_unreadable_range_in_one_line(tmp_path):
    data = gzip.decompress(JOB2.read_bytes())
    at = data.index(b'"ph"', len(data) * 3 // 4)
    path = tmp_path / "bad.json"
    path.write_bytes(data[:at] + b"@" + data[at + 1 :])
    kind, message = split_worker.collect_range(str(path), len(data) // 2, None, len(data), _identity(path))
    assert kind == "error" and f"at byte {at}" in message
    path.write_bytes(b'[{"traceEvents": []}]')  # not an object at the top: the fast reader leaves it to ijson
    assert split_worker.collect_range(str(path), 0, None, 100, _identity(path)) == ("cut", None)


def test_a_step_in_two_ranges_keeps_its_longest_span_and_the_later_of_equals():
    """ProfilerStep#3 in both ranges: one pass keeps the longest span, the later one of equals."""

    def step(ts: float, dur: float) -> collect.Event:
        return collect.Event("user_annotation", "ProfilerStep#3", 1, 1, ts, dur)

    for first, second, kept in (
        ([step(0.0, 5.0)], [step(10.0, 1.0)], (5.0, 0.0)),
        ([step(0.0, 1.0)], [step(10.0, 5.0)], (5.0, 10.0)),
        ([step(0.0, 2.0)], [step(10.0, 2.0)], (2.0, 10.0)),
    ):
        c = Collector()
        c.on_records(first)
        part, marks = _range_part([second])
        assert merge(c, part, marks=marks)
        assert (c.data.steps[3], c.data.step_ts[3]) == kept
        one = Collector()
        one.on_records(first + second)
        assert (one.data.steps, one.data.step_ts) == (c.data.steps, c.data.step_ts)


def test_at_the_step_cap_a_known_step_still_takes_a_longer_span(monkeypatch):
    """The step table full (MAX_STEPS 1): a part's step already in it is updated, as one pass does."""
    monkeypatch.setattr(collect, "MAX_STEPS", 1)
    first = [collect.Event("user_annotation", "ProfilerStep#3", 1, 1, 0.0, 1.0)]
    second = [collect.Event("user_annotation", "ProfilerStep#3", 1, 1, 10.0, 5.0)]
    c = Collector()
    c.on_records(first)
    part, marks = _range_part([second])
    assert merge(c, part, marks=marks)
    assert (c.data.steps, c.data.step_ts) == ({3: 5.0}, {3: 10.0})


@pytest.fixture
def range_merges(monkeypatch) -> list[int]:
    """The events of each range part merged here."""
    seen: list[int] = []
    real = read_ranges.merge

    def spy(c, p, frozen_base=None, marks=None):
        assert marks is not None, "a chunk's part: this file was read chunk by chunk"
        seen.append(p.events)
        return real(c, p, frozen_base, marks)

    monkeypatch.setattr(read_ranges, "merge", spy)
    return seen


@pytest.fixture
def in_ranges(monkeypatch):
    """64 KB blocks (a test trace is many chunks) and ranges whatever the machine's load or the size."""
    monkeypatch.setattr(cutting, "BLOCK_BYTES", 1 << 16)
    monkeypatch.setattr(split_plan, "MIN_SPLIT_BYTES", 0)
    monkeypatch.setenv(split_plan.MODE_VARIABLE, "always")


def _outcome(path: Path, jobs: int) -> tuple[dict, list] | str:
    try:
        d = collect_trace(path, jobs)
    except TraceError as e:
        return str(e)
    return dump(d), _blocks(d)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_real_gpu_traces_in_three_ranges_collect_the_same(path, in_ranges, rereads, range_merges, monkeypatch):
    monkeypatch.setattr(collect, "SPILL_AT", 1000)  # spills too: their blocks must match
    three = _outcome(path, 3)
    assert rereads == [] and len(range_merges) == 2 and min(range_merges) > 0
    assert three == _outcome(path, 1)
    assert (collect_trace(path, 3).read_on, collect_trace(path, 1).read_on) == (3, 1)  # its analyses: two cores


def test_a_gzip_longer_than_its_trailer_says_is_read_in_one_process(tmp_path, in_ranges, rereads):
    """Two gzip members: the trailer is the last one's, 60 % of the JSON, so the ranges are planned
    on too few bytes and the worker's would run to the end of the file. It gives up on the first
    chunk past that size (where a file past 4 GiB wraps the figure, its part could hold most of it)."""
    data = gzip.decompress(JOB2.read_bytes())
    cut = len(data) * 2 // 5
    path = tmp_path / "two.json.gz"
    path.write_bytes(gzip.compress(data[:cut], 9) + gzip.compress(data[cut:], 0))
    assert split_plan.json_bytes(path, path.stat().st_size) == len(data) - cut
    two = _outcome(path, 2)
    assert rereads == [path]
    assert two == _outcome(path, 1)


def test_past_a_cap_in_a_range_the_file_is_read_in_one_process(in_ranges, rereads, range_merges, monkeypatch):
    """A range past the name cap on its own: which name came first decides the shared entries."""
    monkeypatch.setattr(collect, "MAX_NAMES", 50)  # in the forked worker too
    two = _outcome(JOB2, 2)
    assert rereads == [JOB2] and range_merges == []
    assert two == _outcome(JOB2, 1)


def test_a_file_gone_before_its_ranges_are_read_fails_as_one_pass_does(tmp_path, in_ranges, rereads, monkeypatch):
    """Planned in ranges, then removed before this process opens it: the error names the file."""
    path = tmp_path / "rank0.json"
    path.write_bytes(gzip.decompress(JOB2.read_bytes()))
    real = split_plan.plan_ranges

    def plan_then_remove(p, size, jobs):
        planned = real(p, size, jobs)
        p.unlink()
        return planned

    monkeypatch.setattr(split_plan, "plan_ranges", plan_then_remove)
    with pytest.raises(TraceError) as e:
        collect_trace(path, 2)
    assert str(e.value).startswith(f"{path}: ") and rereads == []


def _die(*args):
    os._exit(9)


def test_a_range_worker_that_dies_leaves_the_file_to_this_process(in_ranges, rereads, monkeypatch):
    monkeypatch.setattr(split_worker, "collect_range", _die)  # the forked worker sees it
    two = _outcome(JOB2, 2)
    assert rereads == [JOB2]
    assert two == _outcome(JOB2, 1)


def test_a_range_worker_that_stalls_leaves_its_pieces_to_this_process(in_ranges, rereads, range_merges, monkeypatch):
    """The worker waits (on a pipe, not a sleep) until this process has read its own range and then
    claimed the worker's: the worker reads its range's first piece, this process the rest as a run
    of its own (its second), and the two merged in file order are one pass."""
    monkeypatch.setattr(range_runs, "PIECE_BYTES", 1 << 16)  # many pieces in a small trace
    release_r, release_w = os.pipe()
    parent, real = os.getpid(), range_runs.read_runs

    def stalling(*args):
        if os.getpid() != parent:  # the forked worker, holding both ends
            os.close(release_w)
            select.select([release_r], [], [], 60)  # readable (at its end) once this process closes it
            return real(*args)
        try:
            return real(*args)
        finally:
            with contextlib.suppress(OSError):
                os.close(release_w)

    monkeypatch.setattr(range_runs, "read_runs", stalling)
    try:
        two = _outcome(JOB2, 2)
    finally:
        os.close(release_r)
        with contextlib.suppress(OSError):
            os.close(release_w)
    assert rereads == [] and len(range_merges) == 2, range_merges  # the worker's piece, this process's second run
    monkeypatch.setattr(range_runs, "read_runs", real)
    assert two == _outcome(JOB2, 1)


def test_a_pool_broken_before_the_ranges_are_sent_leaves_the_file_to_this_process(in_ranges, rereads, monkeypatch):
    """A worker that died as it started: the submit itself fails."""
    from concurrent.futures.process import BrokenProcessPool

    real = read_ranges.start_pool

    def broken_pool(jobs):
        pool = real(jobs)
        pool.submit = lambda *a, **k: (_ for _ in ()).throw(BrokenProcessPool("a worker died"))
        return pool

    monkeypatch.setattr(read_ranges, "start_pool", broken_pool)
    two = _outcome(JOB2, 2)
    assert rereads == [JOB2]
    assert two == _outcome(JOB2, 1)


def test_a_file_replaced_while_the_workers_start_is_read_in_one_process(tmp_path, in_ranges, rereads, monkeypatch):
    """The workers open the file by its path: one replaced after this process opened it (a job
    rewriting its trace, a hostile user of a shared directory) must not mix two files' events."""
    path, other = tmp_path / "rank0.json", tmp_path / "other.json"
    data = gzip.decompress(JOB2.read_bytes())
    path.write_bytes(data)
    other.write_bytes(data.replace(b'"cpu_op"', b'"cpu_xx"'))  # as long, other events kept
    real = read_ranges.start_pool

    def swapping_pool(jobs):
        pool = real(jobs)
        os.replace(other, path)
        return pool

    monkeypatch.setattr(read_ranges, "start_pool", swapping_pool)
    two = _outcome(path, 2)
    assert rereads == [path]
    monkeypatch.setattr(read_ranges, "start_pool", real)
    assert two == _outcome(path, 1)  # the new file's, read in one pass


@pytest.mark.parametrize("mode", ["always", "chunks"])
@pytest.mark.parametrize("name", ["rank0.json", "rank0.json.gz"])
def test_summary_of_one_trace_on_two_cores_is_byte_identical(tmp_path, mode, name):
    """The CLI end to end: one ~6 MB trace, --jobs 2 (in ranges, or chunk by chunk) against --jobs 1;
    read in ranges, its workers started before the analyses are imported (read_ranges.reading_ahead), and
    part of its analyses in a child (second_core.py)."""
    from benchmarks.analysis_scale import build

    path = tmp_path / name
    build(tmp_path / "rank0.json", 6)
    if name.endswith(".gz"):
        path.write_bytes(
            gzip.compress((tmp_path / "rank0.json").read_bytes(), compresslevel=0)
        )  # stored: past MIN_SPLIT_BYTES on disk

    # which way the file was read, said on stderr at exit
    code = (
        "import atexit, os, sys\nfrom bridge_plugins.analysis.trace import read_ranges, split\nways = []\n"
        "def read_split(*a, real=split._read_split):\n"
        "    ways.append(('_read_split', real(*a)))\n"
        "    return ways[-1][1]\n"
        "split._read_split = read_split\n"
        "def start(self, path, ranges, total, head_start=0, real=read_ranges.Ranges.__init__):\n"
        "    ways.append(('ahead' if head_start else 'ranges', 'bridge_plugins.analysis.pipeline' in sys.modules))\n"
        "    real(self, path, ranges, total, head_start)\n"
        "read_ranges.Ranges.__init__ = start\n"
        "def finish(self, c, real=read_ranges.Ranges.finish):\n"
        "    ways.append(('finish', real(self, c)))\n"
        "    return ways[-1][1]\n"
        "read_ranges.Ranges.finish = finish\n"
        "from bridge_plugins.analysis import second_core\n"
        "def fork(self, real=second_core.Part.fork):\n"
        "    real(self)\n"
        "    ways.append(('fork', os.getpid() != self.pid))\n"
        "second_core.Part.fork = fork\n"
        "atexit.register(lambda: print(ways, file=sys.stderr))\n"
        "from bridge_plugins.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    )

    def run(jobs: str, *command: str) -> tuple[str, str]:
        r = subprocess.run(
            [sys.executable, "-c", code, *(command or ("summary", "--json")), "--jobs", jobs, str(path)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), split_plan.MODE_VARIABLE: mode},
            timeout=300,
        )
        assert r.returncode == 0, r.stderr
        return r.stdout, r.stderr.strip()

    two, one = run("2"), run("1")
    # read in ranges, started before the analyses were imported; the analyses take a second core too
    way = [("ahead", False), ("finish", True), ("fork", True)] if mode == "always" else [("_read_split", True)]
    assert two[1] == str(way)
    assert one[1] == "[]"
    assert two[0] == one[0]
    if mode == "always" and name == "rank0.json":  # diagnose and report read ahead too
        two, one = run("2", "diagnose", "--json"), run("1", "diagnose", "--json")
        assert (two[1], one[1]) == (str(way), "[]")
        assert two[0] == one[0] and '"findings"' in two[0]
        pages = {jobs: tmp_path / f"report{jobs}.html" for jobs in ("2", "1")}
        two, one = (run(jobs, "report", "-o", str(page))[1] for jobs, page in pages.items())
        assert (two, one) == (str(way), "[]")
        # the footer's minute: the two runs may straddle one (seen failing so: 23:51 against 23:52)
        assert _undated(pages["2"].read_text()) == _undated(pages["1"].read_text())


def _undated(page: str) -> str:
    """A report page without the time it was written (its footer's)."""
    dated = re.subn(r" · \d{4}-\d\d-\d\d \d\d:\d\d UTC · ", " · (when) · ", page)
    assert dated[1] == 1
    return dated[0]


def _started(monkeypatch) -> list:
    """The reads in ranges started from here on."""
    started: list = []
    real = read_ranges.Ranges.__init__

    def spy(self, *a, **k):
        real(self, *a, **k)
        started.append(self)

    monkeypatch.setattr(read_ranges.Ranges, "__init__", spy)
    return started


def test_a_read_started_ahead_is_taken_over_by_the_collector(in_ranges, rereads, range_merges, monkeypatch):
    started = _started(monkeypatch)
    with read_ranges.reading_ahead([str(JOB2)], Workers(jobs=2)) as ahead:
        assert ahead is True and len(started) == 1 and list(read_ranges._AHEAD) == [os.path.realpath(JOB2)]
        starts = started[0].starts
        d = collect_trace(JOB2, 2)
        assert read_ranges._AHEAD == {} and len(started) == 1  # taken over, not started again
    assert (rereads, len(range_merges), d.read_on) == ([], 1, 2)
    assert threading.active_count() == 1  # the pool's threads gone: the analyses may fork (second_core.py)
    size = split_plan.json_bytes(JOB2, JOB2.stat().st_size)
    assert starts == split_plan.range_bounds(size, 2, split_plan.HEAD_START_BYTES)  # its head start
    assert starts[1] < split_plan.range_bounds(size, 2)[1]
    assert (dump(d), _blocks(d)) == _outcome(JOB2, 1)


def test_a_read_started_ahead_and_not_taken_over_is_stopped(in_ranges, monkeypatch):
    started = _started(monkeypatch)
    with pytest.raises(KeyError), read_ranges.reading_ahead([str(JOB2)], Workers(jobs=2)):
        pids = [p.pid for p in started[0].pool._processes.values()]
        raise KeyError  # the command failed before reading it
    assert read_ranges._AHEAD == {} and started[0].pool is None and started[0].raw.closed
    for pid in pids:  # the worker was stopped and waited for
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.mark.parametrize(
    "paths, workers",
    [
        ([str(JOB2), str(JOB2)], Workers(jobs=2)),  # two traces: a process each
        ([str(JOB2)], Workers(jobs=1)),
        ([str(JOB2)], Workers(jobs=2, ray_address="auto")),  # read by a Ray task, in one process
        ([str(JOB2.parent)], Workers(jobs=2)),  # a directory: its traces are found later
        (["/nonexistent/rank0.json"], Workers(jobs=2)),  # its reader says why, later
        ([str(JOB2) + ".sqlite"], Workers(jobs=2)),
    ],
)
def test_no_read_is_started_ahead_but_for_one_chrome_trace_file(in_ranges, monkeypatch, paths, workers):
    started = _started(monkeypatch)
    with read_ranges.reading_ahead(paths, workers) as ahead:
        assert ahead is False
        assert started == [] and read_ranges._AHEAD == {}


def test_a_range_worker_whose_memory_file_cannot_be_written_sends_its_part_through_the_pipe(tmp_path):
    path = tmp_path / "rank0.json"
    path.write_bytes(gzip.decompress(JOB2.read_bytes()))
    size, ident = path.stat().st_size, _identity(path)
    read_only = os.open(tmp_path / "x", os.O_RDONLY | os.O_CREAT)
    try:
        kind, [(_, part, marks)] = split_worker.collect_range(str(path), size // 2, None, size, ident, read_only)
    finally:
        os.close(read_only)
    assert kind == "part" and part.events > 0 and marks


def test_a_file_that_cannot_be_checked_as_its_ranges_start_fails_with_its_name(in_ranges, monkeypatch):
    """``fstat`` of the opened file failing as the workers are about to start: the file's error
    (no memory file was made yet, and none is left open)."""

    def no_stat(fh):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(split_worker, "file_identity", no_stat)
    before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(TraceError) as e:
        read_ranges.Ranges(JOB2, 2, JOB2.stat().st_size)
    assert str(e.value).startswith(f"{JOB2}: ") and "Input/output error" in str(e.value)
    assert len(os.listdir("/proc/self/fd")) == before


@pytest.mark.parametrize("merges", [True, False], ids=["merged", "read-again"])
def test_a_read_in_ranges_leaves_no_descriptor_open(in_ranges, range_merges, rereads, monkeypatch, merges):
    """Every descriptor a read in ranges opens is closed when it ends, merged or read again in one
    process: the file, the workers' memory files and the pipes their pieces are claimed from."""
    if not merges:
        monkeypatch.setattr(read_ranges, "merge", lambda *a, **k: False)
    before = sorted(os.listdir("/proc/self/fd"))
    d = collect_trace(JOB2, 2)
    assert sorted(os.listdir("/proc/self/fd")) == before
    assert (d.read_on, rereads) == ((2, []) if merges else (1, [JOB2]))


def test_ranges_closed_twice_close_once(in_ranges):
    """A read in ranges stopped, then stopped again (a command's way out after the collector's):
    its workers, its file and its memory files go once, the second close does nothing."""
    ranges = read_ranges.Ranges(JOB2, 2, len(gzip.decompress(JOB2.read_bytes())))
    fds = list(ranges.part_fds)
    assert len(fds) == 1 and fds[0] >= 0
    inode = os.fstat(fds[0]).st_ino
    ranges.close()
    ranges.close()
    assert ranges.pool is None and ranges.part_fds == [] and ranges.raw.closed
    try:
        reused = os.fstat(fds[0]).st_ino  # the number may name another file since: not this one
    except OSError:
        reused = None
    assert reused != inode


@pytest.mark.parametrize("merges", [True, False])
def test_the_workers_end_while_the_last_part_merges(in_ranges, rereads, monkeypatch, merges):
    """As the last part arrives the pool is told to end (parallel.ending: its worker exits while the
    part merges), and closing waits for it: no thread or process is left, whether the merge took the
    part or gave up (the file then read again in one process)."""
    started = _started(monkeypatch)
    seen: list[tuple] = []
    real = read_ranges.merge

    def spy(c, p, frozen_base=None, marks=None):
        ranges = started[-1]
        seen.append((ranges.wait_end is not None, ranges.pool is not None))
        return real(c, p, frozen_base, marks) if merges else False

    monkeypatch.setattr(read_ranges, "merge", spy)
    d = collect_trace(JOB2, 2)
    assert seen == [(True, True)]  # told to end before the merge, not yet waited for
    assert started[-1].pool is None and threading.active_count() == 1
    assert multiprocessing.active_children() == []
    assert (rereads, d.read_on) == (([], 2) if merges else ([JOB2], 1))
    assert (dump(d), _blocks(d)) == _outcome(JOB2, 1)
