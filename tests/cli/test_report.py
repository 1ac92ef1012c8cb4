"""`bridge-plugins report` without a browser: bad input, hostile names, a CPU-only trace of our
recipe, files that cannot be read. (The browser checks are in test_report_browser.py.)"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from bridge_plugins.cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _trace(path: Path, op_name: str) -> Path:
    """A minimal Kineto trace: two ProfilerSteps on the CPU thread, one operator in each."""
    events = []
    for i, ts in enumerate((0, 1000)):
        events.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{i + 3}",
                "ts": ts,
                "dur": 900,
                "pid": 1,
                "tid": 1,
            }
        )
        events.append({"ph": "X", "cat": "cpu_op", "name": op_name, "ts": ts + 10, "dur": 500, "pid": 1, "tid": 1})
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        json.dump({"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": events}, f)
    return path


def test_hostile_names_are_escaped(tmp_path, capsys):
    evil = '</td><script>alert("x")</script><img src="http://example.com/x.png">'
    job = tmp_path / "job"
    _trace(job / "torch_profile" / "rank0_steps3-4.pt.trace.json.gz", evil)
    out = tmp_path / "r.html"
    assert main(["report", str(job), "-o", str(out)]) == 0
    html = out.read_text()
    assert "<script" not in html and "<img" not in html and "&lt;script&gt;" in html
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert f"report: {out}" in capsys.readouterr().out
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left


def test_unreadable_files_are_listed_and_the_rest_reported(tmp_path, capsys):
    job = tmp_path / "job"
    _trace(job / "torch_profile" / "rank0_steps3-4.pt.trace.json.gz", "aten::mm")
    (job / "memory_snapshot_0.pickle").write_bytes(b"not a pickle")
    shutil.copy(FIXTURES / "memory_schema.pickle", job / "memory_snapshot_1.pickle")
    out = tmp_path / "r.html"
    assert main(["report", str(job), "-o", str(out)]) == 0
    html = out.read_text()
    assert 'id="problems"' in html and "memory_snapshot_0.pickle" in html and 'id="chart-memory-timeline-0"' in html
    assert "aten::mm" in html
    err = capsys.readouterr().err
    assert "skipped" in err and "memory_snapshot_0.pickle" in err


@pytest.mark.parametrize("case", ["empty_dir", "missing_out_dir", "out_is_dir", "bad_top", "bad_baseline"])
def test_bad_input_one_line_exit_2(tmp_path, capsys, case):
    job = tmp_path / "job"
    _trace(job / "torch_profile" / "rank0_steps3-4.pt.trace.json.gz", "aten::mm")
    empty = tmp_path / "empty"
    empty.mkdir()
    argv = {
        "empty_dir": ["report", str(empty), "-o", str(tmp_path / "r.html")],
        "missing_out_dir": ["report", str(job), "-o", str(tmp_path / "nope" / "r.html")],
        "out_is_dir": ["report", str(job), "-o", str(tmp_path)],
        "bad_top": ["report", str(job), "--top", "0", "-o", str(tmp_path / "r.html")],
        "bad_baseline": ["report", str(job), "--baseline", str(empty), "-o", str(tmp_path / "r.html")],
    }[case]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("bridge-plugins report: error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "r.html").exists()


def test_cpu_only_trace_says_no_gpu(tmp_path):
    job = tmp_path / "job"
    _trace(job / "torch_profile" / "rank0_steps3-4.pt.trace.json.gz", "aten::mm")
    out = tmp_path / "r.html"
    assert main(["report", str(job), "-o", str(out)]) == 0
    html = out.read_text()
    assert "No GPU events" in html and 'id="chart-steps"' in html and "One rank only" in html


def test_snapshots_only(tmp_path):
    shutil.copy(FIXTURES / "memory_schema.pickle", tmp_path / "memory_snapshot_0.pickle")
    out = tmp_path / "r.html"
    assert main(["report", str(tmp_path), "-o", str(out)]) == 0
    html = out.read_text()
    assert "No PyTorch traces here" in html and 'id="chart-memory-timeline-0"' in html and "chart-steps" not in html
