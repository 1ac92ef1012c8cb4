"""One trace read by several processes (trace/split.py) collects exactly what one process does.

The merge is checked in-process on random events and cuts (hypothesis), with spills at every few
elements; the whole read on the real GPU fixtures and the hostile traces, cut into many chunks. A
split read that quietly fell back to one process would pass every equality here, so each test also
asserts which way the file was read (``rereads``: the files read again in one process).
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bridge_plugins.analysis.trace import collect, cutting, split, split_plan, split_worker
from bridge_plugins.analysis.trace.collect import Args, Collector, Event
from bridge_plugins.analysis.trace.reader import TraceError
from bridge_plugins.analysis.trace.split import collect_trace, merge
from tests.analysis.collected_state import dump, state
from tests.analysis.event_strategies import FIXTURES, events
from tests.analysis.hostile_inputs import CASES, JOB2

ROOT = Path(__file__).resolve().parents[2]
SMALL = [c for c in CASES if not c.big]


def _pieces(records: list, cuts: list[int]) -> list[list]:
    bounds = [0, *sorted(min(c, len(records)) for c in cuts), len(records)]
    return [records[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def _part(records: list) -> collect.Collected:
    c = Collector()
    c.on_records(records)
    return c.data


def _spills(c: Collector) -> list:
    """Where each spilled column group was cut into blocks: a float sum per block depends on it."""
    d = c.data
    cpu = d.cpu_corr_spilled._blocks if d.cpu_corr_spilled else None
    return [cpu] + [{repr(k): s._blocks for k, s in t.spilled.items()} for t in (d.ops, d.py, d.annotations)]


@settings(max_examples=300, deadline=None)
@example([Event("cpu_op", "a", 1, 1, 0.0, 1.0), Event("cpu_op", "b", 1, 2, 0.0, 1.0)] * 3, [1, 2, 4])
@given(st.lists(events(), max_size=60), st.lists(st.integers(0, 60), max_size=6))
def test_merged_parts_are_what_one_collector_gathers(raw, cuts):
    """Each piece collected alone and merged in order == one collector fed the same pieces,
    spill blocks included (spills at every 3 elements)."""
    pieces = _pieces(raw, cuts)
    parts = [_part(piece) for piece in pieces]  # as a worker gathers them: a chunk never spills
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(collect, "SPILL_AT", 3)
        one = Collector()
        for piece in pieces:
            one.on_records(piece)
        merged = Collector()
        for part in parts:
            assert merge(merged, part)
        assert state(merged) == state(one)
        assert _spills(merged) == _spills(one)
        assert merged.data.last_profiler_step_end == one.data.last_profiler_step_end


def _read_split_in_process(pieces: list[list], freeze: bool = True) -> Collector:
    """What read_split does with each chunk, minus the processes: the worker's part merged, or the
    chunk read here when the part says so or the merge cannot take it. The number read here.
    ``freeze``: once the names are full, the parts are gathered with them, as the workers are once
    they have the file of names (built as the worker builds it)."""
    c = Collector()
    c.read_here = 0  # type: ignore[attr-defined]
    for piece in pieces:
        full = freeze and len(c._ids) >= collect.MAX_NAMES
        frozen = {name: i for i, name in enumerate(c.data.names[: len(c._ids)])} if full else None
        kind, part = split_worker.part_of(piece, frozen)
        if not (kind == "part" and merge(c, part) or kind == "frozen" and merge(c, *part)):
            c.on_records(piece)
            c.read_here += 1  # type: ignore[attr-defined]
    return c


@settings(max_examples=300, deadline=None)
@given(st.lists(events(), max_size=60), st.lists(st.integers(0, 60), max_size=6), st.integers(1, 4))
def test_past_the_caps_merged_or_read_here_is_what_one_collector_gathers(raw, cuts, cap):
    """Names, threads and steps capped at 1-4: a part is merged where the order of its events
    does not matter, else its chunk is read here; either way the state is one collector's."""
    pieces = _pieces(raw, cuts)
    with pytest.MonkeyPatch.context() as mp:
        for name in ("MAX_NAMES", "MAX_THREADS", "MAX_STEPS"):
            mp.setattr(collect, name, cap)
        one = Collector()
        for piece in pieces:
            one.on_records(piece)
        for freeze in (True, False):
            assert state(_read_split_in_process(pieces, freeze)) == state(one)
            assert _read_split_in_process(pieces, freeze).data.name_types == one.data.name_types


def _ops(names: list[str], cat: str = "cpu_op", corr: int = -1, stream: int = -1) -> list[Event]:
    return [Event(cat, n, 1, 1, 0.0, 1.0, Args(stream, corr)) for n in names]


def test_past_the_name_cap_a_part_needing_one_shared_entry_is_merged(monkeypatch):
    """Past MAX_NAMES, operators share "(other operators)" and kernels their type's entry, each made
    when first needed: a part that needs one new entry merges; one that needs two (an operator and
    a kernel past the cap) does not, as which comes first decides their ids; its chunk is read here.
    (The parts are gathered under the real cap, as in a worker, whose chunk is far below it.)"""
    kernels = _ops(["ampere_sgemm_128x64_nn"], "kernel", corr=5, stream=7)
    first, both, ops = _part(_ops(["a", "b"])), _part(_ops(["e"]) + kernels), _part(_ops(["c", "d", "c", "a"]))
    gemm = _part(_ops(["ampere_sgemm_64x64_nn"], "kernel", corr=6, stream=7))
    monkeypatch.setattr(collect, "MAX_NAMES", 2)
    alone = Collector()
    assert merge(alone, first) and merge(alone, gemm)  # a kernel alone: its type's entry, no other
    assert alone.data.names == ["a", "b", "(other computation kernels): past 2 distinct names"]
    c = Collector()
    assert merge(c, first)
    before = state(c)
    assert not merge(c, both)
    assert state(c) == before
    assert merge(c, ops)
    assert c.data.names == ["a", "b", "(other operators): past 2 distinct names"]
    assert c.data.ops[(1, 1)][2].tolist() == [0, 1, 2, 2, 2, 0]
    assert merge(c, both)  # now one new entry: merged
    assert c.data.names[-1] == "(other computation kernels): past 2 distinct names"
    assert c.data.gpu_name.tolist() == [3] and c.data.name_types == {3: "computation"}
    assert c.data.ops[(1, 1)][2].tolist() == [0, 1, 2, 2, 2, 0, 2]


def test_a_part_gathered_with_the_full_names_carries_only_its_shared_entries(monkeypatch):
    """Once the names are full, a worker given them (part_of's ``frozen``) gives each event its final
    id and sends only the shared entries it made; the merge maps those to the reading process's,
    and refuses a part that would make two (their order decides the ids)."""
    monkeypatch.setattr(collect, "MAX_NAMES", 2)
    kernel = _ops(["ampere_sgemm_128x64_nn"], "kernel", corr=5, stream=7)
    pieces = [_ops(["a", "b"]), kernel + _ops(["b", "e"]), _ops(["c", "a", "d"]), _ops(["f"]) + kernel]
    frozen = {"a": 0, "b": 1}
    one = Collector()
    for piece in pieces:
        one.on_records(piece)
    c = Collector()
    assert merge(c, _part(pieces[0]))
    kind, (both, base) = split_worker.part_of(pieces[1], frozen)
    assert (kind, base) == ("frozen", 2)
    assert both.names == [
        "(other computation kernels): past 2 distinct names",
        "(other operators): past 2 distinct names",
    ]
    assert both.name_types == {2: "computation"}
    before = state(c)
    assert not merge(c, both, base)  # two new shared entries: read here, as read_split does
    assert state(c) == before
    c.on_records(pieces[1])
    kind, (ops, base) = split_worker.part_of(pieces[2], frozen)
    assert (kind, ops.names) == ("frozen", ["(other operators): past 2 distinct names"])
    assert ops.ops[(1, 1)][2].tolist() == [2, 0, 2]  # the part's own ids: its entry is 2 here
    assert merge(c, ops, base)
    assert merge(c, *split_worker.part_of(pieces[3], frozen)[1])  # both entries exist now
    assert state(c) == state(one) and c.data.name_types == one.data.name_types
    assert c.data.ops[(1, 1)][2].tolist() == [0, 1, 1, 3, 3, 0, 3, 3]  # "(other operators)" is 3 here


@pytest.mark.parametrize("cap", ["MAX_THREADS", "MAX_STEPS"])
def test_past_the_thread_or_step_cap_the_merge_refuses_and_leaves_the_collector_alone(cap, monkeypatch):
    """Past MAX_THREADS threads share one entry, their events interleaved in the order they came;
    past MAX_STEPS which step is dropped depends on the order too: the part's chunk is read here."""
    first = _part([Event("user_annotation", "ProfilerStep#1", 1, 1, 0.0, 1.0)])
    more = [Event("user_annotation", f"ProfilerStep#{n}", 1, n, 0.0, 1.0) for n in (2, 3)]
    two, one = _part(more), _part(more[:1])
    monkeypatch.setattr(collect, cap, 2)
    c = Collector()
    assert merge(c, first)
    before = state(c)
    assert not merge(c, two)
    assert state(c) == before
    assert merge(c, one)  # up to the cap is fine


@pytest.fixture(params=["chunks"])
def small_chunks(monkeypatch, request):
    """64 KB blocks: a test trace is many chunks, so the merge does the work (and is split, however
    small), chunk by chunk whatever the machine's load; or in ranges (``always``), where a test
    asks for both."""
    monkeypatch.setattr(cutting, "BLOCK_BYTES", 1 << 16)
    monkeypatch.setattr(split_plan, "MIN_SPLIT_BYTES", 0)
    monkeypatch.setenv(split_plan.MODE_VARIABLE, request.param)


BOTH_WAYS = pytest.mark.parametrize("small_chunks", ["chunks", "always"], indirect=True)


def _outcome(path: Path, jobs: int) -> dict | str:
    try:
        return dump(collect_trace(path, jobs))
    except TraceError as e:
        return str(e)


@pytest.mark.parametrize("via", ["slots", "pipe"])
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_real_gpu_traces_split_into_many_chunks_collect_the_same(path, via, small_chunks, rereads, monkeypatch):
    """Chunks through the shared slots, or (bigger than a slot) through the pool's pipe."""
    if via == "pipe":
        monkeypatch.setattr(split, "SLOT_BYTES", 1000)
    monkeypatch.setattr(collect, "SPILL_AT", 1000)  # spills too: their blocks must match
    three = _outcome(path, 3)
    assert rereads == []
    assert three == _outcome(path, 1)


@BOTH_WAYS
@pytest.mark.parametrize("case", SMALL, ids=lambda c: c.name)
def test_hostile_traces_split_give_the_same_data_or_the_same_error(case, tmp_path, small_chunks, rereads):
    path = case.build(tmp_path)
    two = _outcome(path, 2)
    # a cut inside a string or nested list (the "boundaries" case) is the one reason to read again here
    assert rereads == ([path] if case.name == "boundaries" else [])
    assert two == _outcome(path, 1)


@BOTH_WAYS
def test_an_error_late_in_the_file_is_the_one_a_single_pass_gives(tmp_path, small_chunks, rereads):
    """In the last quarter: a worker's range, where the file is read in ranges."""
    data = gzip.decompress(JOB2.read_bytes())
    at = data.index(b'"ph"', len(data) * 3 // 4)
    bad = tmp_path / "bad.json"
    bad.write_bytes(data[:at] + b"@" + data[at + 1 :])
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(JOB2.read_bytes()[: JOB2.stat().st_size * 3 // 4])
    for path, words in ((bad, f"at byte {at}"), (cut, "truncated gzip")):
        two = _outcome(path, 2)
        assert rereads == []
        one = _outcome(path, 1)
        rereads.clear()
        assert isinstance(two, str) and two == one and words in two, (one, two)


def test_a_chunk_with_odd_values_is_read_here_event_by_event(tmp_path, small_chunks, rereads, read_here):
    """A value of an unexpected type sends its chunk to the dict path, in this process."""
    data = gzip.decompress(JOB2.read_bytes())
    at = data.index(b'"ts": ', data.index(b'"ph": "X"', len(data) // 2)) + len(b'"ts": ')
    end = data.index(b",", at)
    odd = tmp_path / "odd.json"
    odd.write_bytes(data[:at] + b'"' + data[at:end] + b'"' + data[end:])  # a ts in a string
    two = _outcome(odd, 2)
    assert rereads == [] and len(read_here) == 1 and read_here[0] <= at < read_here[0] + (1 << 17)
    assert two == _outcome(odd, 1)


@pytest.fixture
def read_here(monkeypatch) -> list[int]:
    """The file offsets of the chunks the reading process read itself."""
    seen: list[int] = []
    real = split._Split.read_here

    def spy(self, data, at, last):
        seen.append(at)
        return real(self, data, at, last)

    monkeypatch.setattr(split._Split, "read_here", spy)
    return seen


@pytest.fixture
def frozen_merges(monkeypatch, tmp_path) -> list[int | None]:
    """Each merge's ``frozen_base`` (None: a part that carried its names); the names file is
    written under ``tmp_path/tmp``, which the test checks is empty afterwards."""
    seen: list[int | None] = []
    real = split.merge

    def spy(c, p, frozen_base=None):
        seen.append(frozen_base)
        return real(c, p, frozen_base)

    monkeypatch.setattr(split, "merge", spy)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(split.tempfile, "tempdir", str(tmp_path / "tmp"))
    return seen


class _FullDisk:
    """A file whose writes fail as on a full disk (stand-in: the real one cannot be had in a test)."""

    def __init__(self, fd: int) -> None:
        os.close(fd)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def write(self, data: bytes) -> int:
        raise OSError(28, "No space left on device")


@pytest.mark.parametrize("names_file", ["written", "unwritable", "disk full", "unreadable", "too long"])
def test_past_the_name_cap_the_split_goes_on(
    names_file, small_chunks, rereads, read_here, frozen_merges, tmp_path, monkeypatch
):
    """job2 past 50 names: operators and kernels then share entries; the chunks that would make
    two new ones are read here, the others still merged. Once the names are full the workers get
    them in a file and send final ids; a file that cannot be written (a full disk) or read, or
    names too long to copy into every worker, cost only that: the parts carry their names."""
    monkeypatch.setattr(collect, "MAX_NAMES", 50)  # in the forked workers too
    if names_file == "unwritable":
        monkeypatch.setattr(split.tempfile, "mkstemp", lambda **kw: (_ for _ in ()).throw(OSError(28, "full")))
    elif names_file == "disk full":
        real_fdopen = os.fdopen  # the names file is the one opened "wb" by fd; the others read

        def fdopen(fd, mode="r", *args, **kwargs):
            return _FullDisk(fd) if mode == "wb" else real_fdopen(fd, mode, *args, **kwargs)

        monkeypatch.setattr(split.os, "fdopen", fdopen)
    elif names_file == "unreadable":
        monkeypatch.setattr(split_worker, "_frozen_ids", lambda path: (_ for _ in ()).throw(OSError(2, "gone")))
    elif names_file == "too long":
        monkeypatch.setattr(split, "NAMES_FILE_MAX_CHARS", 100)  # job2's first 50 names are longer
    two = _outcome(JOB2, 2)
    assert rereads == []
    assert 0 < len(read_here) < 40  # of 150 chunks
    frozen = [b for b in frozen_merges if b is not None]
    assert frozen == ([50] * len(frozen) if names_file == "written" else [])
    assert len(frozen) > 100 or names_file != "written"  # of 150 chunks
    assert list((tmp_path / "tmp").iterdir()) == []  # the names file is removed
    one = _outcome(JOB2, 1)
    assert two == one
    assert any("past 50 distinct names" in n for n in one["names"])


def _die_past_the_middle(chunk: bytes, at: int, last: bool, names: str | None = None):
    if at > 4_000_000:
        os._exit(9)
    return REAL_COLLECT_CHUNK(chunk, at, last, names)


REAL_COLLECT_CHUNK = split.collect_chunk


def test_a_worker_that_dies_leaves_the_rest_of_the_file_to_this_process(small_chunks, rereads, read_here, monkeypatch):
    monkeypatch.setattr(split, "collect_chunk", _die_past_the_middle)  # the forked workers see it: by the pipe
    monkeypatch.setattr(split_worker, "collect_chunk", _die_past_the_middle)  # and through the slots
    two = _outcome(JOB2, 2)
    assert rereads == []
    assert read_here and min(read_here) <= 4_000_000 + (1 << 17) and max(read_here) > 9_000_000
    assert two == _outcome(JOB2, 1)


def test_a_small_trace_is_read_in_one_process(rereads):
    assert JOB2.stat().st_size < split_plan.MIN_SPLIT_BYTES
    _outcome(JOB2, 2)
    assert rereads == [JOB2]


def test_a_chunk_too_big_for_one_part_is_read_here(small_chunks, rereads, read_here, monkeypatch):
    """A part holds no spill file (it could not cross to this process): such a chunk (more events
    than SPILL_AT, here 10) is read by this process."""
    monkeypatch.setattr(collect, "SPILL_AT", 10)  # in the forked workers too
    two = _outcome(JOB2, 2)
    assert rereads == [] and len(read_here) > 100
    assert two == _outcome(JOB2, 1)
