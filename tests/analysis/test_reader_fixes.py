"""Reader bugs a review found: each test failed on the code before its fix."""

from __future__ import annotations

import gc
import gzip
import json
import os
import shutil
import subprocess
import sys

import pytest

from bridge_plugins.analysis.job import report, steps_line
from bridge_plugins.analysis.page import build
from bridge_plugins.analysis.pipeline import summarize
from bridge_plugins.analysis.trace.reader import TraceError
from bridge_plugins.jobdir.scan import find_artifacts
from tests.analysis.bad_input_support import GOOD, assert_clean_error, cli
from tests.analysis.gpu_traces import J128
from tests.analysis.hostile_inputs import JOB2


def test_one_invalid_utf8_byte_without_huge_ints_is_summarized(tmp_path):
    text = gzip.decompress(J128[0].read_bytes()).replace(b'"aten::_foreach_mul_"', b'"aten::\xff_foreach_mul_"', 1)
    p = tmp_path / "bad_byte.json"
    p.write_bytes(text)
    (t,) = summarize([p], top=None).traces
    assert t.gpu.computation_us == 210320 and t.steps.captured == [551, 552]
    assert any(r.name == "aten::\ufffd_foreach_mul_" for r in t.top_cpu_ops)
    proc = cli("summary", p)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "551-552" in proc.stdout


def _trace(tmp_path, name, events):
    p = tmp_path / name
    p.write_text(json.dumps({"traceEvents": events}).replace('"INF"', "1e999"))
    return p


def test_number_too_big_for_a_float_is_a_one_line_skip(tmp_path):
    p = _trace(tmp_path, "inf.json", [{"ph": "X", "cat": "cpu_op", "name": "x", "ts": "INF", "dur": 1}])
    assert_clean_error(cli("summary", p), str(p), "not valid JSON")


def test_unhashable_pid_or_tid_does_not_crash(tmp_path):
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 5, "pid": [1], "tid": {}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 10, "dur": 2, "pid": 1, "tid": 2},
    ]
    p = _trace(tmp_path, "odd_pid.json", events)
    proc = cli("summary", p, "--json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    names = {r["name"] for r in json.loads(proc.stdout)["traces"][0]["top_cpu_ops"]}
    assert names == {"aten::mm", "aten::add"}


def test_memory_on_a_fifo_is_refused_not_read(tmp_path):
    fifo = tmp_path / "memory_snapshot_0.pickle"
    os.mkfifo(fifo)
    proc = subprocess.run(
        ["timeout", "30", sys.executable, "-m", "bridge_plugins", "memory", str(fifo)], capture_output=True, text=True
    )
    assert proc.returncode != 124, "hung reading the FIFO"
    assert_clean_error(proc, str(fifo), "not a regular file")


def test_read_trace_on_a_fifo_raises_trace_error(tmp_path):
    fifo = tmp_path / "t.json"
    os.mkfifo(fifo)
    code = (
        "import sys; from bridge_plugins.analysis.trace.reader import read_trace, TraceError\n"
        "try: read_trace(sys.argv[1], print, print)\nexcept TraceError as e: print(e)"
    )
    proc = subprocess.run(["timeout", "30", sys.executable, "-c", code, str(fifo)], capture_output=True, text=True)
    assert proc.returncode == 0, "hung reading the FIFO"
    assert proc.stdout.strip().startswith(f"{fifo}: not a regular file")


def test_writer_staging_dir_is_not_reported_and_renamed_trace_is_skipped_once(tmp_path):
    shutil.copy(J128[0], tmp_path / GOOD)
    staging = tmp_path / ".rank0_steps551-552.pt.trace.json.gz.k3j2.tmp"
    staging.mkdir()
    shutil.copy(J128[0], staging / ".partial.pt.trace.json.gz")
    shutil.copy(J128[0], staging / "rank1_steps551-552.pt.trace.json.gz")
    proc = cli("summary", tmp_path)
    assert proc.returncode == 0 and "skipped" not in proc.stderr and ".tmp" not in proc.stdout, proc.stderr
    text, _ = report(tmp_path)
    assert "skipped" not in text and ".tmp" not in text
    assert find_artifacts(tmp_path).traces == {0: [tmp_path / GOOD]}
    html, _ = build([tmp_path])
    assert ".tmp" not in html and "not a trace name" not in html
    (tmp_path / "rank2_stepsX-Y.json").write_text('{"not": "a trace"}')
    proc = cli("summary", tmp_path)
    assert proc.returncode == 0 and "skipped: skipped" not in proc.stderr
    assert "rank2_stepsX-Y.json" in proc.stderr and "not a Chrome trace" in proc.stderr


def test_every_window_of_a_rank_is_kept(tmp_path):
    shutil.copy(J128[0], tmp_path / GOOD)
    later = gzip.decompress(J128[0].read_bytes()).replace(b"ProfilerStep#551", b"ProfilerStep#561")
    later = later.replace(b"ProfilerStep#552", b"ProfilerStep#562")
    (tmp_path / "rank0_steps561-562.pt.trace.json.gz").write_bytes(gzip.compress(later))
    text, steps = report(tmp_path)
    assert steps == {0: [[551, 552], [561, 562]]}
    assert steps_line(steps) == "Steps captured per rank: rank 0: 551-552 and 561-562"
    assert steps_line({0: [[10, 11, 12, 13, 14]], 1: [[10, 11, 12, 13, 14]]}) == (
        "Steps captured per rank: rank 0: 10-14, rank 1: 10-14"
    )


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("cut", [False, True], ids=["whole", "cut"])
def test_the_gzip_reader_is_closed_when_the_read_ends(tmp_path, jobs, cut, monkeypatch):
    """ISA-L's reader runs a thread; left to the garbage collector (an exception's traceback can
    keep it in a cycle), its close() joined that thread from inside another thread's start, and
    `report` hung there (threading's shutdown lock is not reentrant). It is closed when read."""
    from isal.igzip_threaded import _ThreadedGzipReader

    from bridge_plugins.analysis.trace import split_plan
    from bridge_plugins.analysis.trace.split import collect_trace

    monkeypatch.setattr(split_plan, "MIN_SPLIT_BYTES", 0)  # jobs=2 splits this small file too
    monkeypatch.setenv(split_plan.MODE_VARIABLE, "always")
    data = JOB2.read_bytes()
    path = tmp_path / "r.json.gz"
    path.write_bytes(data[: len(data) // 2] if cut else data)
    try:
        collect_trace(path, jobs)
    except TraceError as e:
        assert cut and "truncated gzip" in str(e)
    left_open = [o for o in gc.get_objects() if isinstance(o, _ThreadedGzipReader) and not o.closed]
    assert left_open == []
