"""The decision to split one trace over worker processes (trace/split_plan.py): by size, cores
free and what the first chunk shows, so that the default is never slower than ``--jobs 1``."""

from __future__ import annotations

import gzip
import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge_plugins.analysis import cpu_idle
from bridge_plugins.analysis.trace import cutting, split_plan
from bridge_plugins.analysis.trace.split_plan import FirstChunk, first_chunk, free_cores, split_workers
from tests.analysis.hostile_inputs import JOB2

BIG = 300 << 20
LIGHT = FirstChunk(events=2760, names=312)  # job128's mix: the first MB of a trace built from it


def test_one_job_or_a_small_file_is_read_in_one_process():
    assert split_workers(BIG, 1, 15.0, LIGHT) == 1
    assert split_workers(split_plan.MIN_SPLIT_BYTES - 1, 16, 15.0, LIGHT) == 1
    assert split_workers(split_plan.MIN_SPLIT_BYTES, 16, 15.0, LIGHT) == 15


def test_two_cores_never_split():
    """This process and one worker: measured 0.82-1.07x of one process (issue 32)."""
    assert free_cores(2, 0.0) == 1.0
    assert split_workers(BIG, 2, free_cores(2, 0.0), None) == 1
    assert split_workers(BIG, 2, free_cores(2, 0.0), LIGHT) == 1


@pytest.mark.parametrize(
    ("usable", "load", "jobs", "workers"),
    [
        (16, 0.0, 16, 15),  # one core is the reading process's
        (16, 3.5, 16, 11),  # 11.5 free: whole cores only
        (16, 3.5, 4, 4),  # at most --jobs
        (16, 13.0, 16, 2),
        (16, 13.1, 16, 1),  # 1.9 free: no split
        (4, 9.0, 4, 1),  # a loaded machine: no core is free
    ],
)
def test_workers_follow_the_cores_free(usable, load, jobs, workers):
    assert split_workers(BIG, jobs, free_cores(usable, load), LIGHT) == workers


def test_a_first_chunk_of_mostly_distinct_names_or_odd_values_is_not_split():
    assert split_workers(BIG, 8, 8.0, FirstChunk(events=1000, names=500)) == 8
    assert split_workers(BIG, 8, 8.0, FirstChunk(events=1000, names=501)) == 1
    assert split_workers(BIG, 8, 8.0, FirstChunk(events=1000, names=10, typed=False)) == 1
    assert split_workers(BIG, 8, 8.0, FirstChunk(events=0, names=0)) == 8  # no complete event: nothing to map


def test_the_mode_overrides_the_cores_but_not_the_size_or_jobs():
    assert split_workers(BIG, 4, 0.0, None, mode="always") == 4
    assert split_workers(BIG, 4, 15.0, LIGHT, mode="never") == 1
    assert split_workers(BIG, 1, 0.0, None, mode="always") == 1
    assert split_workers(1000, 4, 0.0, None, mode="always") == 1


def test_first_chunk_counts_the_complete_events_and_their_names(monkeypatch):
    """With blocks bigger than the file, its first chunk is all of it: the counts are the file's."""
    monkeypatch.setattr(cutting, "BLOCK_BYTES", 1 << 28)
    with gzip.open(JOB2) as fh:
        events = [e for e in json.load(fh)["traceEvents"] if e.get("ph") == "X"]
    got = first_chunk(JOB2)
    assert got == FirstChunk(events=len(events), names=len({e["name"] for e in events}))
    assert got.events == 26933  # the fixture's own count, so the comparison above cannot hold vacuously


def test_first_chunk_of_the_first_mb_only():
    got = first_chunk(JOB2)
    assert got is not None and got.typed and 0 < got.events < 26933


def test_first_chunk_of_a_file_that_is_not_a_trace_is_none(tmp_path):
    bad = tmp_path / "r.json.gz"
    bad.write_bytes(b"not gzip at all")
    assert first_chunk(bad) is None
    assert first_chunk(tmp_path / "missing.json") is None


def test_plan_reads_the_mode_from_the_environment(monkeypatch, tmp_path):
    path = tmp_path / "big.json"
    path.write_bytes(b"{}")
    monkeypatch.setenv(split_plan.MODE_VARIABLE, "always")
    assert split_plan.plan(path, BIG, 3) == 3
    monkeypatch.setenv(split_plan.MODE_VARIABLE, "never")
    assert split_plan.plan(path, BIG, 3) == 1


MB = 1 << 20


@pytest.mark.parametrize(
    ("size", "total", "jobs", "cores_free", "mode", "ranges"),
    [
        (BIG, BIG, 2, 1.0, "auto", 2),  # two idle cores: this process and one worker
        (BIG, BIG, 2, 0.5, "auto", 2),  # the other core half free: a range worker still gains
        (BIG, BIG, 2, 0.49, "auto", 1),
        (BIG, BIG, 16, 3.6, "auto", 5),
        (BIG, BIG, 4, 15.0, "auto", 4),  # at most --jobs
        (BIG, BIG, 1, 15.0, "always", 1),
        (20 * MB, BIG, 2, 1.0, "auto", 2),  # a gzip file: its JSON's size counts, past the minimum on disk
        (split_plan.MIN_SPLIT_BYTES - 1, BIG, 2, 1.0, "always", 1),
        (split_plan.MIN_SPLIT_BYTES, BIG, 2, 1.0, "always", 2),
        (BIG, None, 2, 1.0, "always", 1),  # the size of its JSON unknown
        (BIG, split_plan.RANGE_MAX_BYTES, 2, 1.0, "auto", 2),
        (BIG, split_plan.RANGE_MAX_BYTES + 1, 2, 1.0, "always", 1),  # a part would hold too much
        (BIG, BIG, 2, 0.0, "always", 2),
        (BIG, BIG, 2, 1.0, "chunks", 1),
        (BIG, BIG, 2, 1.0, "never", 1),
    ],
)
def test_ranges_follow_the_size_the_cores_free_and_the_mode(size, total, jobs, cores_free, mode, ranges):
    assert split_plan.range_workers(size, total, jobs, cores_free, mode) == ranges


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 1 << 40), st.integers(1, 64), st.one_of(st.just(0), st.integers(0, 1 << 40)))
def test_range_bounds_give_each_process_as_much_to_do(total, ranges, head_start):
    """Every worker as much as the others; this process as much less as their head start, unless
    that would leave it less than ``total / (2 * ranges)``: then that much."""
    starts = split_plan.range_bounds(total, ranges, head_start)
    assert len(starts) == ranges and starts[0] == 0
    assert starts == sorted(starts) and (ranges == 1 or starts[-1] <= total)
    ends = [*starts[1:], total]
    work = [split_plan.PREFIX_COST * s + (e - s) for s, e in zip(starts, ends, strict=True)]
    rounding = 2 * ranges + 1 + total * 1e-12
    assert max(work[1:], default=0) - min(work[1:], default=0) <= rounding
    if ranges > 1:
        lead = work[1] - work[0]
        least = abs(work[0] - total / (2 * ranges)) <= rounding
        assert abs(lead - head_start) <= rounding or (least and lead < head_start)


def test_two_ranges_give_the_worker_less_than_half():
    assert split_plan.range_bounds(1000, 2) == [0, 541]  # 541 = 0.15 * 541 + 459
    assert split_plan.range_bounds(1000, 2, 37) == [0, 521]  # 521 + 37 = 0.15 * 521 + 479
    assert split_plan.range_bounds(1000, 2, 1000) == [0, 250]  # at least 1000 / (2 * 2)


def test_cpu_ticks_count_the_cpus_given_only():
    stat = (  # the 9th and 10th figures (guest time) are counted in the first two already
        "cpu  100 0 50 1000 10 0 0 5 7 0\n"
        "cpu0 10 0 5 400 5 0 0 2 3 1\n"
        "cpu1 20 1 5 300 3 0 0 1 4 0\n"
        "cpu12 1 0 0 7 0 0 0 0 0 0\n"
        "intr 1 2 3\n"
    )
    assert cpu_idle.cpu_ticks(stat, {0, 12}) == (405 + 7, 422 + 8)
    assert cpu_idle.cpu_ticks(stat, {1}) == (303, 330)
    assert cpu_idle.cpu_ticks(stat, set()) == (0, 0)


def test_idle_cores_between_two_samples():
    assert split_plan.idle_cores(2, (100, 1000), (130, 1060)) == 1.0
    assert split_plan.idle_cores(2, (100, 1000), (100, 1060)) == 0.0
    assert split_plan.idle_cores(2, (100, 1000), (102, 1004)) is None  # too few ticks to tell
    assert split_plan.idle_cores(2, (100, 1000), (102, 1005)) == 0.8  # MIN_TICKS: enough
    assert split_plan.idle_cores(2, None, (105, 1060)) is None


def test_no_more_cores_are_free_beside_this_process_than_the_others():
    """Both of 2 CPUs idle between the samples (this process waited on a read, or a page fault):
    one is still this process's to read on, so at most 1 is free beside it, and a 2-core machine
    never reads a 3 GB trace chunk by chunk (its reading process would cut and merge as much as
    one process reads: the same 11-14 s, and 236-253 MB at its peak against 237 MB)."""
    assert split_plan.idle_cores(2, (100, 1000), (160, 1060)) == 1.0
    assert split_plan.idle_cores(8, (100, 1000), (160, 1060)) == 7.0
    assert split_plan.split_workers(3 << 30, 2, split_plan.idle_cores(2, (100, 1000), (160, 1060)), None) == 1


def test_the_cores_free_are_measured_where_proc_stat_allows(monkeypatch):
    """Busy beside this process since it started: 0 free, whatever the load average says."""
    monkeypatch.setattr(cpu_idle, "STARTED", (1000, 10_000))
    monkeypatch.setattr(cpu_idle, "ticks_now", lambda: (1000, 10_400))
    monkeypatch.setattr(split_plan.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert split_plan._cores_free() == 0.0
    monkeypatch.setattr(cpu_idle, "ticks_now", lambda: None)  # no /proc/stat: the 1-minute load average
    monkeypatch.setattr(split_plan.os, "getloadavg", lambda: (0.5, 3.0, 3.0))
    assert split_plan._cores_free() == split_plan.free_cores(len(os.sched_getaffinity(0)), 0.5)


def test_ticks_now_reads_this_machines_cpus():
    before = cpu_idle.ticks_now()
    with open("/proc/stat") as fh:
        after = cpu_idle.cpu_ticks(fh.read(), os.sched_getaffinity(0))
    assert before is not None and 0 < before[0] <= after[0] and before[0] < before[1] <= after[1]


def test_the_json_bytes_of_a_file(tmp_path):
    plain = tmp_path / "r.json"
    plain.write_bytes(b"{}" * 100)
    assert split_plan.json_bytes(plain, 200) == 200
    assert split_plan.json_bytes(JOB2, JOB2.stat().st_size) == len(gzip.decompress(JOB2.read_bytes()))
    odd = tmp_path / "odd.json.gz"  # a trailer that says less than half the file: not its size
    odd.write_bytes(b"\x1f\x8b" + bytes(100) + (40).to_bytes(4, "little"))
    assert split_plan.json_bytes(odd, 106) is None
    assert split_plan.json_bytes(odd, 80) == 40  # half the file: accepted
    assert split_plan.json_bytes(tmp_path / "gone.json.gz", 10) is None
    tiny = tmp_path / "tiny.json.gz"
    tiny.write_bytes(b"ab")  # shorter than a trailer
    assert split_plan.json_bytes(tiny, 2) is None


def test_plan_ranges_reads_the_mode_and_asks_nothing_of_one_job(monkeypatch, tmp_path):
    path = tmp_path / "big.json"
    path.write_bytes(b"{}")
    monkeypatch.setenv(split_plan.MODE_VARIABLE, "always")
    assert split_plan.plan_ranges(path, BIG, 3) == (3, BIG)
    assert split_plan.plan_ranges(path, BIG, 1) == (1, 0)
    monkeypatch.setenv(split_plan.MODE_VARIABLE, "chunks")
    assert split_plan.plan_ranges(path, BIG, 3) == (1, BIG)
    monkeypatch.delenv(split_plan.MODE_VARIABLE)  # auto: the cores free decide
    monkeypatch.setattr(split_plan, "_cores_free", lambda: 1.0)
    assert split_plan.plan_ranges(path, BIG, 3) == (2, BIG)
    monkeypatch.setattr(split_plan, "_cores_free", lambda: 0.2)
    assert split_plan.plan_ranges(path, BIG, 3) == (1, BIG)


def test_a_plan_made_early_takes_only_measured_idle_cores(monkeypatch, tmp_path):
    """Started ahead, a few ticks after the command began: the load average does not decide."""
    path = tmp_path / "big.json"
    path.write_bytes(b"{}")
    monkeypatch.setenv(split_plan.MODE_VARIABLE, "auto")
    monkeypatch.setattr(split_plan.os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # both free, it says
    monkeypatch.setattr(split_plan.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(cpu_idle, "STARTED", (1000, 10_000))
    monkeypatch.setattr(cpu_idle, "ticks_now", lambda: (1002, 10_004))  # too few ticks
    assert split_plan.plan_ranges(path, BIG, 3, measured=True) == (1, BIG)
    assert split_plan.plan_ranges(path, BIG, 3) == (2, BIG)  # later, the load average decides
    monkeypatch.setattr(cpu_idle, "ticks_now", lambda: (1010, 10_020))  # enough: half idle
    assert split_plan.plan_ranges(path, BIG, 3, measured=True) == (2, BIG)
    monkeypatch.setattr(cpu_idle, "ticks_now", lambda: (1002, 10_004))
    monkeypatch.setenv(split_plan.MODE_VARIABLE, "always")
    assert split_plan.plan_ranges(path, BIG, 3, measured=True) == (3, BIG)
