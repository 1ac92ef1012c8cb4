"""A read in ranges that balances itself (trace/range_runs.py): every range in pieces, each claimed
by exactly one process, its own range's first; the runs each process reads merged in file order
== one pass, whichever process read which piece, in whatever order it claimed them (a piece behind
its stream read from the file's beginning again).

The pieces' assignment is drawn (hypothesis) and played in-process; the claims' pipes are taken
from by real forked processes; and a whole read in ranges is played with the work taken over each
way, deterministically: one process waits, on a pipe, until the other has claimed all it can.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge_plugins.analysis.trace import collect, cutting, range_runs, read_ranges, split_plan
from bridge_plugins.analysis.trace.collect import Collector
from bridge_plugins.analysis.trace.split import collect_trace, merge
from tests.analysis.collected_state import dump
from tests.analysis.event_strategies import FIXTURES
from tests.analysis.hostile_inputs import CASES, JOB2

SMALL = next(p for p in FIXTURES if p.name == "job128_rank0.json.gz")  # 1.8 MB of JSON


@given(st.integers(0, 10**9), st.integers(0, 10**9), st.integers(1, 1 << 22))
def test_pieces_cover_their_range_in_near_equal_parts(lo, length, piece):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(range_runs, "PIECE_BYTES", piece)
        starts = range_runs.piece_starts(lo, lo + length)
    sizes = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert starts[0] == lo and starts[-1] == lo + length and all(type(at) is int for at in starts)  # byte offsets
    assert 1 <= len(sizes) <= range_runs.MAX_PIECES
    assert max(sizes) - min(sizes) <= 1
    assert len(sizes) == range_runs.MAX_PIECES or len(sizes) == max(1, round(length / piece))


class _At:
    """A stream's position as Claims.claim reads it."""

    def __init__(self, at: int, done: int = -1) -> None:
        self.at, self.done = at, done

    def behind(self, lo: int) -> bool:
        return lo <= self.done


def _claimed(claims: range_runs.Claims, own: int, at: _At) -> list[tuple[int, int | None]]:
    got = []
    while (piece := claims.claim(own, at)) is not None:
        got.append(piece)
        at.at = at.done = piece[0]
    return got


def test_a_process_claims_its_own_range_first_then_the_shortest_walk_worth_it(monkeypatch):
    monkeypatch.setattr(range_runs, "PIECE_BYTES", 10)
    claims = range_runs.Claims.make([0, 40, 100], 120)
    try:
        assert claims.starts == ((0, 10, 20, 30, 40), (40, 50, 60, 70, 80, 90, 100), (100, 110, 120))
        assert (claims.first(0), claims.first(1), claims.first(2)) == ((0, 10), (40, 50), (100, 110))
        assert _claimed(claims, 1, _At(50)) == [(50, 60), (60, 70), (70, 80), (80, 90), (90, 100), (10, 20), (20, 30)]
        # after its own: range 0's next from the beginning (a walk of 10 for 2 pieces left after it,
        # 0.15 * 10 <= 20), then its next (10 <= 10); not range 2's last (any walk > 0 pieces left
        # after it), nor range 0's last
        monkeypatch.setattr(range_runs, "SKIP_COST", 1.0)
        assert claims.claim(2, _At(0)) == (110, None)  # its own, however far: to the file's end
        assert claims.claim(0, _At(0)) == (30, 40)
        assert [claims.claim(r, _At(0)) for r in range(3)] == [None] * 3
    finally:
        claims.close()
    with pytest.raises(OSError):
        os.fstat(claims.fds[0])


def test_a_walk_costlier_than_the_work_left_there_is_not_taken(monkeypatch):
    monkeypatch.setattr(range_runs, "PIECE_BYTES", 10)
    monkeypatch.setattr(range_runs, "SKIP_COST", 0.5)
    claims = range_runs.Claims.make([0, 50], 100)  # 5 pieces a range: 4 to claim in each
    try:
        assert [claims.claim(0, _At(0)) for _ in range(2)] == [(10, 20), (20, 30)]
        assert [claims.claim(1, _At(0)) for _ in range(4)] == [(60, 70), (70, 80), (80, 90), (90, None)]
        # range 1's process at the end: range 0's next, 30, from the beginning: 15 > 1 piece left after it
        assert claims.claim(1, _At(100, 99)) is None
        # ahead of its stream: a walk of 5 (2.5 <= 10)
        assert claims.claim(1, _At(25, 20)) == (30, 40)
        assert claims.claim(0, _At(30, 20)) == (40, 50)
    finally:
        claims.close()


def test_a_walk_exactly_worth_the_work_left_is_taken_and_one_byte_more_is_not(monkeypatch):
    """Range 1 (50 to 100, 5 pieces of 10): its next piece at 60 with 3 left after it, 30 bytes of
    work; SKIP_COST 1: a walk of 30 is taken, of 31 not. And another range's last piece, with
    nothing after it, only where the stream is at its start."""
    monkeypatch.setattr(range_runs, "PIECE_BYTES", 10)
    monkeypatch.setattr(range_runs, "SKIP_COST", 1.0)
    claims = range_runs.Claims.make([0, 50], 100)
    try:
        assert [claims.claim(0, _At(0)) for _ in range(4)] == [(10, 20), (20, 30), (30, 40), (40, 50)]
        assert claims.claim(0, _At(29, 20)) is None
        assert claims.claim(0, _At(30, 20)) == (60, 70)
        assert [claims.claim(1, _At(0)) for _ in range(2)] == [(70, 80), (80, 90)]
        assert claims.claim(0, _At(89, 80)) is None
        assert claims.claim(0, _At(90, 80)) == (90, None)
    finally:
        claims.close()


def test_pipes_made_before_one_fails_are_closed(monkeypatch):
    made: list[int] = []
    real = os.pipe

    def pipe():
        if len(made) == 4:
            raise OSError(24, "Too many open files")
        fds = real()
        made.extend(fds)
        return fds

    monkeypatch.setattr(os, "pipe", pipe)
    with pytest.raises(OSError, match="Too many"):
        range_runs.Claims.make([0, 50, 70], 100)
    for fd in made:
        with pytest.raises(OSError):
            os.fstat(fd)


def test_processes_claiming_at_once_get_every_piece_once(monkeypatch):
    """Four forked processes claim from the same pipes until none is left (no walk too far):
    between them, every piece but each range's first, none twice."""
    monkeypatch.setattr(range_runs, "PIECE_BYTES", 1)
    monkeypatch.setattr(range_runs, "SKIP_COST", 0.0)
    claims = range_runs.Claims.make([0, 200, 700], 1200)
    results = []
    try:
        for own in range(4):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child
                got = _claimed(claims, own % 3, _At(0))
                os.write(w, json.dumps(got).encode())
                os._exit(0)
            os.close(w)
            results.append((pid, r))
        got = []
        for pid, r in results:
            with os.fdopen(r, "rb") as fh:
                got += [tuple(p) for p in json.loads(fh.read())]
            assert os.waitpid(pid, 0)[1] == 0
    finally:
        claims.close()
    pieces = [(s[k], s[k + 1]) for s in claims.starts for k in range(1, len(s) - 1)]
    assert sorted(got, key=lambda p: p[0]) == [*pieces[:-1], (pieces[-1][0], None)]


def _stream_of(path: Path):
    raw = open(path, "rb")  # noqa: SIM115 - closed by the caller's exit stack
    return raw, range_runs.Streams(raw, path.name.endswith(".gz"))


class _Scripted(range_runs.Claims):
    """Claims that hand each process the pieces drawn for it, in the order drawn."""

    script: dict[int, list[tuple[int, int]]]

    def claim(self, own, s):
        return self._piece(*self.script[own].pop(0)) if self.script[own] else None


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_runs_read_in_any_order_by_any_process_merge_to_one_pass(data):
    """Three ranges in pieces; each piece but the first of each drawn for a process (0, 1 or 2),
    each process's claims in a drawn order; every process's runs merged in file order == one pass,
    spill blocks included."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cutting, "BLOCK_BYTES", 1 << 14)
        mp.setattr(collect, "SPILL_AT", 500)
        mp.setattr(range_runs, "PIECE_BYTES", 1 << 16)
        total = split_plan.json_bytes(SMALL, SMALL.stat().st_size)
        cut = sorted(data.draw(st.lists(st.integers(1, total - 1), min_size=2, max_size=2, unique=True)))
        bounds = [0, *cut]
        claims = range_runs.Claims.make(bounds, total)
        claims.close()
        pieces = [(r, k) for r, s in enumerate(claims.starts) for k in range(1, len(s) - 1)]
        owners = data.draw(st.lists(st.integers(0, 2), min_size=len(pieces), max_size=len(pieces)))
        script = {
            p: data.draw(st.permutations([x for x, o in zip(pieces, owners, strict=True) if o == p])) for p in range(3)
        }
        scripted = _Scripted(claims.fds, claims.starts)
        object.__setattr__(scripted, "script", {p: list(v) for p, v in script.items()})
        runs = []
        c = Collector()
        for own in range(3):
            raw, streams = _stream_of(SMALL)
            with raw, streams:
                first = c if own == 0 else range_runs.run_collector()
                got = range_runs.read_runs(streams, first, own, scripted, 0, None)
            assert got is not None and got[0] == (bounds[own], first)
            runs += got if own else got[1:]
        one = collect_trace(SMALL, 1)
        runs.sort(key=lambda run: run[0])
        for _, r in runs:
            assert merge(c, r.data, marks=r.marks)
        assert dump(c.data) == dump(one)


def test_a_piece_that_starts_at_a_chunk_passed_over_is_read_from_the_beginning(monkeypatch):
    """A piece of no chunk right after chunk X passes over X; the piece that starts exactly at X,
    claimed next, must start the stream again (X is behind it), or X's events would be lost."""
    monkeypatch.setattr(cutting, "BLOCK_BYTES", 1 << 14)
    with open(SMALL, "rb") as raw, range_runs.Streams(raw, True) as streams:
        starts = [at for _, at, _ in streams().pieces]  # where one pass's chunks start
    x, total = starts[len(starts) // 2], split_plan.json_bytes(SMALL, SMALL.stat().st_size)
    claims = _Scripted((), ((0, x, x + 1, x + 2, total),))
    object.__setattr__(claims, "script", {0: [(0, 2), (0, 1), (0, 3)]})  # [x+1, x+2), then [x, x+1), then the rest
    c = Collector()
    with open(SMALL, "rb") as raw, range_runs.Streams(raw, True) as streams:
        runs = range_runs.read_runs(streams, c, 0, claims, 0, None)
    assert runs is not None and [at for at, _ in runs] == [0, x, x + 2]  # the empty run of x+1 left out
    for _, r in runs[1:]:
        assert merge(c, r.data, marks=r.marks)
    assert dump(c.data) == dump(collect_trace(SMALL, 1))


def test_a_range_stops_where_one_pass_cuts_again_and_reads_odd_chunks_as_one_pass(tmp_path, monkeypatch):
    """A cut inside a string (strings holding what looks like an event boundary): False, the file is
    read in one process. A chunk with a value of another type: its events as dicts, as one pass."""
    monkeypatch.setattr(cutting, "BLOCK_BYTES", 1 << 16)
    tricky = next(case for case in CASES if case.name == "boundaries").build(tmp_path)
    with open(tricky, "rb") as raw, range_runs.Streams(raw, False) as streams:
        assert streams().read(Collector(), 0, None) is False
    data = gzip.decompress(JOB2.read_bytes())
    at = data.index(b'"ts": ', data.index(b'"ph": "X"', len(data) // 2)) + len(b'"ts": ')
    end = data.index(b",", at)
    odd = tmp_path / "odd.json"
    odd.write_bytes(data[:at] + b'"' + data[at:end] + b'"' + data[end:])  # a ts in a string
    c = Collector()
    with open(odd, "rb") as raw, range_runs.Streams(raw, False) as streams:
        s = streams()
        c.on_header(s.head)
        assert s.read(c, 0, None) is True
    assert dump(c.data) == dump(collect_trace(odd, 1))


def _waiting(monkeypatch, waits: int) -> None:
    """Range ``waits``'s process starts reading only once the other has read all it would: the
    other, left alone, takes over every piece of it but the first (SKIP_COST 0: any walk is worth)."""
    go_r, go_w = os.pipe()
    real = range_runs.read_runs

    def read_runs(open_stream, first, own, claims, lo, hi):
        if own == waits:
            os.read(go_r, 1)  # blocks until the other is done
            return real(open_stream, first, own, claims, lo, hi)
        try:
            return real(open_stream, first, own, claims, lo, hi)
        finally:
            os.write(go_w, b"x")

    monkeypatch.setattr(range_runs, "read_runs", read_runs)  # before the worker forks: its too
    monkeypatch.setattr(range_runs, "SKIP_COST", 0.0)


@pytest.fixture
def merged(monkeypatch) -> list[int]:
    """Where each run merged by a read in ranges starts (its first chunk's byte), in merge order."""
    seen: list[int] = []
    real = read_ranges.merge

    def spy(c, p, frozen_base=None, marks=None):
        seen.append(p.events)
        return real(c, p, frozen_base, marks)

    monkeypatch.setattr(read_ranges, "merge", spy)
    return seen


@pytest.mark.parametrize("waits", [0, 1], ids=["the worker takes over", "this process takes over"])
def test_a_read_in_ranges_whose_process_stalls_is_finished_by_the_other(tmp_path, monkeypatch, rereads, merged, waits):
    """The plain JSON of a real GPU trace in two ranges of 8 pieces each; one process stalls until
    the other has read its own range and every piece of the stalled one's but the first: the same
    collected data as one pass, and exactly the runs that makes merged."""
    monkeypatch.setattr(cutting, "BLOCK_BYTES", 1 << 16)
    monkeypatch.setattr(split_plan, "MIN_SPLIT_BYTES", 0)
    monkeypatch.setenv(split_plan.MODE_VARIABLE, "always")
    path = tmp_path / "rank0.json"
    path.write_bytes(gzip.decompress(JOB2.read_bytes()))
    total = path.stat().st_size
    monkeypatch.setattr(range_runs, "PIECE_BYTES", split_plan.range_bounds(total, 2)[1] // 8)
    _waiting(monkeypatch, waits)
    fds = len(os.listdir("/proc/self/fd"))
    d = collect_trace(path, 2)
    assert rereads == [] and d.read_on == 2
    assert len(os.listdir("/proc/self/fd")) == fds  # the pipes closed with the read
    one = collect_trace(path, 1)
    assert dump(d) == dump(one)
    # the worker's own range's first piece and this process's run of the rest of that range (a gap
    # after its own: that first piece); or the worker's own range and its run of range 0's pieces
    # after the first
    assert len(merged) == 2 and all(n > 0 for n in merged)
    assert sum(merged) < one.events
