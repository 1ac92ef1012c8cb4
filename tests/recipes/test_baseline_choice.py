"""The ``--baseline`` the main job suggests is the previous run of the same experiment, never the
newest job of another experiment or a run that finished after this one (issue 33, point 9)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

from recipes import after_job, baseline


def job(home: Path, experiment_id: str, finished: float) -> Path:
    """A job directory as NeMo Run lays it out, with one trace whose time is ``finished``."""
    title = experiment_id.rsplit("_", 1)[0]
    job_dir = home / "experiments" / title / experiment_id / "tiny_gpt"
    trace = job_dir / "torch_profile" / "rank0_steps10-14.pt.trace.json.gz"
    trace.parent.mkdir(parents=True)
    trace.write_bytes(b"")
    os.utime(trace, (finished, finished))
    os.utime(trace.parent, (finished, finished))
    return job_dir


def test_the_baseline_is_the_previous_run_of_the_same_experiment(tmp_path):
    before = job(tmp_path, "tiny_gpt_profiling_1000", 1000)
    job(tmp_path, "other_experiment_2000", 2000)  # newer, but another experiment
    this = job(tmp_path, "tiny_gpt_profiling_3000", 3000)
    job(tmp_path, "tiny_gpt_profiling_4000", 4000)  # same experiment, but after this one
    assert baseline.earlier_job(this) == before


def test_no_baseline_when_only_other_experiments_ran(tmp_path):
    job(tmp_path, "other_experiment_2000", 2000)
    assert baseline.earlier_job(job(tmp_path, "tiny_gpt_profiling_3000", 3000)) is None


def test_the_hint_names_the_experiment_and_the_run(tmp_path):
    before = job(tmp_path, "tiny_gpt_profiling_1000", 1000)
    this = job(tmp_path, "tiny_gpt_profiling_3000", 3000)
    arts = SimpleNamespace(traces={0: [this / "t"]}, memory={}, nsys=[])
    line = next(x for x in after_job.how_to_open(arts, this, before) if "--baseline" in x)
    assert line.endswith("# against the previous run of tiny_gpt_profiling (tiny_gpt_profiling_1000)"), line
