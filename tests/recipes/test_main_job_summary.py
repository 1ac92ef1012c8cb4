"""The main job's end-of-run summary reads each trace and snapshot once (text, steps and the HTML
report all come from one summary), on two ranks of the real 128-rank GPU job and a snapshot."""

from __future__ import annotations

import argparse
import importlib
import shutil
from pathlib import Path

from bridge_plugins.jobdir.names import JOB_REPORT_NAME
from tests.analysis.gpu_traces import J128
from tests.support import ROOT


def test_print_summary_reads_each_file_once_and_writes_the_report(tmp_path, monkeypatch, capsys):
    job = tmp_path / "job"
    (job / "torch_profile").mkdir(parents=True)
    for rank, src in enumerate(J128):
        shutil.copy(src, job / "torch_profile" / f"rank{rank}_steps551-552.pt.trace.json.gz")
    shutil.copy(ROOT / "tests" / "fixtures" / "memory_recipe_b8.pickle", job / "memory_snapshot_0.pickle")

    chrome_mod = importlib.import_module("bridge_plugins.analysis.chrome")  # the Chrome-trace reader
    snapshot_mod = importlib.import_module("bridge_plugins.analysis.memory.snapshot")
    reads: list[str] = []
    real_trace, real_snapshot = chrome_mod.collect_trace, snapshot_mod.load_snapshot
    monkeypatch.setattr(chrome_mod, "collect_trace", lambda p, *a: reads.append(Path(p).name) or real_trace(p, *a))
    monkeypatch.setattr(snapshot_mod, "load_snapshot", lambda p: reads.append(Path(p).name) or real_snapshot(p))

    from recipes.after_job import print_summary

    print_summary(argparse.Namespace(profiler="pytorch", memory_history=True), job, "cuda")
    out = capsys.readouterr().out
    assert sorted(reads) == sorted(
        ["rank0_steps551-552.pt.trace.json.gz", "rank1_steps551-552.pt.trace.json.gz", "memory_snapshot_0.pickle"]
    ), reads
    assert "Steps captured per rank: rank 0: 551-552, rank 1: 551-552" in out
    assert f"HTML report: {job / JOB_REPORT_NAME}" in out
    html = (job / JOB_REPORT_NAME).read_text()
    assert "rank1_steps551-552.pt.trace.json.gz" in html and "memory_snapshot_0.pickle" in html
