"""Any trace directory: torch's tensorboard_trace_handler names and other Chrome traces are read by
summary, compare, report and diagnose; the rank comes from distributedInfo; other JSON is skipped."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys

from bridge_plugins.analysis.pipeline import summarize
from tests.analysis.gpu_traces import FIXTURES, J128


def profiler_log_dir(tmp_path):
    """What torch.profiler.tensorboard_trace_handler leaves: <worker>.<time>.pt.trace.json[.gz]."""
    d = tmp_path / "log"
    d.mkdir()
    shutil.copy(J128[1], d / "node7_4242.1700000000123.pt.trace.json.gz")  # rank 1 by distributedInfo
    raw = gzip.decompress(J128[0].read_bytes())
    (d / "node7_4241.1700000000456.pt.trace.json").write_bytes(raw)  # uncompressed, rank 0
    (d / "sub").mkdir()
    shutil.copy(FIXTURES / "job2_rank0.json.gz", d / "sub" / "other_tool_output.json.gz")  # found by its header
    (d / "config.json").write_text(json.dumps({"lr": 0.1, "note": "traceEvents is only a word here"}))
    (d / "notes.txt").write_text("not json")
    return d


def test_summary_reads_a_profiler_log_directory(tmp_path):
    d = profiler_log_dir(tmp_path)
    s = summarize([d])
    got = sorted((t.file.rsplit("/", 1)[1], t.rank, t.rank_source) for t in s.traces)
    assert got == [
        ("node7_4241.1700000000456.pt.trace.json", 0, "distributedInfo"),
        ("node7_4242.1700000000123.pt.trace.json.gz", 1, "distributedInfo"),
        ("other_tool_output.json.gz", 0, "distributedInfo"),
    ]
    assert [(p.file.rsplit("/", 1)[1], p.error) for p in s.problems] == [
        ("config.json", "not a Chrome trace (no traceEvents key near the start)")
    ]


def test_every_reader_command_takes_the_directory(tmp_path):
    d = profiler_log_dir(tmp_path)
    for args in (["summary"], ["diagnose"], ["compare", str(d)], ["report", "-o", str(tmp_path / "r.html")]):
        proc = subprocess.run(
            [sys.executable, "-m", "bridge_plugins", *args, str(d)], capture_output=True, text=True, timeout=600
        )
        assert proc.returncode == 0, (args, proc.stderr[-2000:])
        assert "config.json: not a Chrome trace" in proc.stderr, args
    assert "node7_4242.1700000000123.pt.trace.json.gz" in (tmp_path / "r.html").read_text()
