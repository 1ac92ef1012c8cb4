"""Hostile memory snapshots (issue 19.1): each gets a result or one line naming the file and what is
wrong, in bounded time and under 300 MB of RSS; never a traceback, a hang or an OOM kill.
The cases are in tests/analysis/hostile_snapshots.py; benchmarks/hostile_snapshots.py prints the
table with a normal snapshot of each size beside it."""

from __future__ import annotations

import os
import sys

import pytest

from tests.analysis.hostile_snapshots import CASES, run_measured
from tests.support import ROOT

BIG = {"10^7 distinct frames"}  # a 150 MB file: its own test below, marked big
RESULT = {"10^5-deep list under an unread key", "device is 10^18"}  # legal: read, with a result


@pytest.mark.parametrize("name", [n for n in CASES if n not in BIG])
def test_hostile_snapshot_is_one_line_in_bounds(tmp_path, name):
    path = tmp_path / "snap.pickle"
    r = _written_and_read(name, path)
    lines = r["stderr"].strip().splitlines()
    if name in RESULT:
        assert (r["rc"], lines) == (0, []), r
    else:
        assert r["rc"] == 2, r
        assert len(lines) == 1 and str(path) in lines[0], r
        assert "not a CUDA memory snapshot" in lines[0] or "refused" in lines[0], r
    assert "Traceback" not in r["stderr"]
    assert r["rss_mb"] < 300, r
    assert r["seconds"] < 60, r


def _written_and_read(name: str, path) -> dict:
    """Case ``name`` written at ``path``, then read by ``bridge-plugins memory`` in a measured child."""
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        CASES[name](path)
    finally:
        sys.set_int_max_str_digits(limit)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return run_measured([sys.executable, "-m", "bridge_plugins", "memory", str(path)], ROOT, env, timeout=120)


@pytest.mark.big
def test_10e7_distinct_frames_are_refused_before_unpickling(tmp_path):
    """150 MB of distinct frame dicts used to load into 2.1 GB before the frames limit refused them;
    now the opcode scan starts once loading has grown by 64 MB, and refuses them."""
    path = tmp_path / "snap.pickle"
    r = _written_and_read("10^7 distinct frames", path)
    assert path.stat().st_size == 150_000_198
    assert r["rc"] == 2, r
    assert r["stderr"] == (
        f"bridge-plugins memory: error: {path}: not a CUDA memory snapshot: more than 10,000 items pile up on the "
        "unpickler's stack by byte 150,118 (pickle.dump, which torch uses, fills containers in "
        "batches of 1,000, a smaller one only last)\n"
    )
    assert r["rss_mb"] < 300, r
