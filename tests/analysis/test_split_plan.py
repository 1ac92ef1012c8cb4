"""The decision to split one trace over worker processes (trace/split_plan.py): by size, cores
free and what the first chunk shows, so that the default is never slower than ``--jobs 1``."""

from __future__ import annotations

import gzip
import json

import pytest

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
