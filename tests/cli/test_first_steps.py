"""What a new user still tripped on after the first run (issue 20): the CLI's and the main job's
messages say what happened and name what the user typed. Each test failed on the code before
its fix."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bridge_plugins import ProfilingConfig, ProfilingController
from bridge_plugins.analysis.text.memory import fmt_bytes
from bridge_plugins.cli import main as cli_main
from bridge_plugins.jobdir.on_demand import (
    new_progress,
    progress_path,
    read_progress,
    read_request,
    requests_dir,
    write_progress,
)
from tests.support import ROOT, clean_env, has_cuda, system_path_without_nsys

FIXTURES = ROOT / "tests" / "fixtures"
SHARED_TRACES = Path(os.environ.get("BRIDGE_SHARED") or ROOT.parent / "shared") / "fixtures" / "gpu-traces"
PROFILER_MADE = FIXTURES / "memory_recipe_b4.pickle"  # torch.cuda._memory_viz._profile_to_snapshot of the recipe


def run(*argv, timeout=180, **env) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), cwd=ROOT, env=clean_env(**env), capture_output=True, text=True, timeout=timeout)


def bridge_plugins(*args, **env) -> subprocess.CompletedProcess:
    return run(sys.executable, "-m", "bridge_plugins", *map(str, args), **env)


def job_with(root: Path, **traces: str) -> Path:
    """A job directory holding real GPU traces (../shared/fixtures/gpu-traces) under our names."""
    if not SHARED_TRACES.is_dir():
        pytest.skip(f"{SHARED_TRACES} is missing (CI clones the repo with shared/ beside it)")
    (root / "torch_profile").mkdir(parents=True)
    for name, source in traces.items():
        shutil.copy(SHARED_TRACES / source, root / "torch_profile" / f"{name}.pt.trace.json.gz")
    return root


# ----------------------------------------------------------------------------- 7. the main job's flags
@pytest.mark.parametrize(
    "args,named",
    [
        (["--start", "5", "--end", "5"], "--end 5"),
        (["--start", "-1"], "--start -1"),
        (["--ranks", "-1"], "--ranks '-1'"),
        (["--ranks", "0,0"], "--ranks '0,0'"),
        (["--steps", "0"], "--steps 0"),
        (["--steps", "x"], "--steps"),
        (["--bogus"], "--bogus"),
    ],
)
def test_a_bad_flag_of_the_main_job_is_one_line_naming_the_flag_typed(tmp_path, args, named):
    proc = run(sys.executable, "-m", "recipes", *args, "--base-dir", str(tmp_path), "--dryrun")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr  # no argparse usage block before it
    assert lines[0].startswith("python -m recipes: error: ") and named in lines[0], lines[0]
    assert "Plugin." not in lines[0] and "profile_step" not in lines[0], "the flag, not the plugin's field"
    assert not (tmp_path / "experiments").exists()


def test_an_end_equal_to_start_says_which_end_would_do():
    proc = run(sys.executable, "-m", "recipes", "--start", "5", "--end", "5", "--dryrun")
    assert "give --end 6 or more" in proc.stderr, proc.stderr


# ----------------------------------------------------------------------------- 2. report --baseline X JOB
def test_report_with_the_baseline_first_reports_the_last_path_against_it(tmp_path):
    base = job_with(tmp_path / "base", **{"rank0_steps4-6": "job2_rank0.json.gz"})
    new = job_with(tmp_path / "new", **{"rank0_steps551-552": "job128_rank0.json.gz"})
    out = tmp_path / "compare.html"
    proc = bridge_plugins("report", "--baseline", base, new, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert f'<div class="inputs">{new}</div>' in out.read_text(), "the run is the path after the baseline"
    assert f"Baseline: {base}." in out.read_text()
    note = [line for line in proc.stderr.splitlines() if "--baseline" in line]
    assert note == [
        f"bridge-plugins report: note: --baseline takes every path after it; read as: report {new} --baseline {base}"
    ], proc.stderr


def test_report_with_only_a_baseline_says_that_it_took_the_path(tmp_path):
    base = job_with(tmp_path / "base", **{"rank0_steps4-6": "job2_rank0.json.gz"})
    proc = bridge_plugins("report", "--baseline", base, "-o", tmp_path / "r.html")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"bridge-plugins report: error: no run to report: --baseline took {base}; "
        f"give the run's job directory or files first: report JOB --baseline {base}"
    ]


# ----------------------------------------------------------------------------- 4, 5. trigger
def test_trigger_on_a_job_that_has_not_made_its_output_dir_yet_says_so_and_how_to_check(tmp_path, capsys):
    job = tmp_path / "job"
    assert cli_main(["trigger", str(job), "--steps", "3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a directory" not in err, err
    assert f"{job} does not exist yet: the job has not created its output dir" in err
    assert "on_demand=true" in err and "'on-demand profiling on" in err, "how to check that it runs with it"


def test_trigger_on_a_job_dir_without_progress_says_it_may_still_be_starting(tmp_path, capsys):
    assert cli_main(["trigger", str(tmp_path), "--steps", "3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has not started training yet" in err and "on_demand=true" in err, err


def test_trigger_memory_on_a_job_that_cannot_record_memory_says_so_up_front(tmp_path, capsys):
    write_progress(
        tmp_path,
        new_progress(
            state="running",
            step=50,
            step_time=time.time(),
            steps_per_s=20.0,
            poll_interval_s=1.0,
            world_size=2,
            can_record_memory=False,
        ),
    )
    assert cli_main(["trigger", str(tmp_path), "--steps", "3", "--memory"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith("--memory: this job cannot record memory (rank 0 has no CUDA"), first
    assert "with a memory snapshot" not in out
    assert read_request(requests_dir(tmp_path) / "1.json").memory is False, "the job is not asked for one"


def test_a_running_job_says_in_its_progress_whether_it_can_record_memory(tmp_path, monkeypatch, capsys):
    """A real controller with on-demand on, on this machine: its progress.json says what
    torch.cuda says, and ``trigger --memory`` tells the user before promising a snapshot."""
    monkeypatch.setenv("BRIDGE_ON_DEMAND_POLL_S", "0.05")
    stop = threading.Event()

    def train():
        with ProfilingController(ProfilingConfig(on_demand=True, output_dir=str(tmp_path)), rank=0, world_size=1) as c:
            step = 0
            while not stop.is_set():
                with c.step(step):
                    time.sleep(0.005)
                step += 1

    thread = threading.Thread(target=train)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not (progress_path(tmp_path).exists() and read_progress(tmp_path).steps_per_s):
            assert time.monotonic() < deadline, "no progress.json with a step rate"
            time.sleep(0.02)
        assert read_progress(tmp_path).can_record_memory is has_cuda()
        assert cli_main(["trigger", str(tmp_path), "--steps", "2", "--memory"]) == 0
    finally:
        stop.set()
        thread.join()
    out = capsys.readouterr().out
    if has_cuda():
        assert "with a memory snapshot" in out and "cannot record memory" not in out
    else:
        assert "cannot record memory" in out and "with a memory snapshot" not in out


# ----------------------------------------------------------------------------- 6. memory: one truth
def test_memory_text_json_and_compare_agree_on_a_profiler_made_snapshot():
    text = bridge_plugins("memory", PROFILER_MADE)
    figures = json.loads(bridge_plugins("memory", PROFILER_MADE, "--json").stdout)
    compared = bridge_plugins("memory", PROFILER_MADE, "--compare", FIXTURES / "memory_recipe_b8.pickle")
    compared_json = json.loads(
        bridge_plugins("memory", PROFILER_MADE, "--compare", FIXTURES / "memory_recipe_b8.pickle", "--json").stdout
    )
    assert "segments: none (a snapshot made from a torch.profiler run: no allocator segments)" in text.stdout
    seg = figures["segments"]
    assert seg["count"] == 0 and seg["per_segment"] == [] and seg["reserved"] is None, seg
    assert compared_json["segments"]["count"] == {"base": 0, "new": 0, "delta": 0}
    assert compared_json["segments"]["reserved"] == {"base": None, "new": None, "delta": None}
    assert "segments: none in either (made from torch.profiler runs: no allocator segments)" in compared.stdout
    assert "MiB ->" not in compared.stdout.split("segments:", 1)[1], compared.stdout


def test_memory_compare_of_an_allocator_snapshot_with_a_profiler_made_one_shows_no_made_up_segments():
    compared = bridge_plugins("memory", FIXTURES / "memory_schema.pickle", "--compare", PROFILER_MADE)
    line = next(s for s in compared.stdout.splitlines() if "segments:" in s)
    assert line.strip() == "segments: 3 -> none, reserved 60.0 MiB -> n/a", line


# ----------------------------------------------------------------------------- 8. small things
def test_report_refuses_to_replace_an_existing_file_unless_forced(tmp_path):
    job = job_with(tmp_path / "job", **{"rank0_steps4-6": "job2_rank0.json.gz"})
    out = tmp_path / "report.html"
    out.write_text("my notes")
    proc = bridge_plugins("report", job, "-o", out)
    assert proc.returncode == 2 and out.read_text() == "my notes"
    assert proc.stderr.strip() == f"bridge-plugins report: error: -o {out}: exists; add --force to replace it"
    forced = bridge_plugins("report", job, "-o", out, "--force")
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout.startswith(f"report: {out} (replaced the file that was there; ")
    assert "<!DOCTYPE html>" in out.read_text()
    again = bridge_plugins("report", job, "-o", tmp_path / "new.html")
    assert again.returncode == 0 and "replaced" not in again.stdout


def test_report_of_one_trace_says_1_trace(tmp_path):
    job = job_with(tmp_path / "job", **{"rank0_steps4-6": "job2_rank0.json.gz"})
    assert cli_main(["report", str(job), "-o", str(tmp_path / "r.html")]) == 0
    html = (tmp_path / "r.html").read_text()
    assert '<div class="sub">1 trace</div>' in html and "1 traces" not in html


def test_report_help_has_no_restructured_text_markup():
    proc = bridge_plugins("report", "--help")
    assert proc.returncode == 0 and "``" not in proc.stdout, proc.stdout
    assert "one self-contained HTML file that opens offline" in " ".join(proc.stdout.split())


def test_compare_lists_no_change_that_prints_as_zero(tmp_path):
    """Two ranks of one job: many ops differ by a few microseconds per step, which print as
    -0.00 ms and were listed as improvements."""
    a = job_with(tmp_path / "a", **{"rank0_steps551-552": "job128_rank0.json.gz"})
    b = job_with(tmp_path / "b", **{"rank0_steps551-552": "job128_rank1.json.gz"})
    proc = bridge_plugins("compare", a, b, "--top", "1000", COLUMNS="200")
    assert proc.returncode == 0, proc.stderr
    changes = re.findall(r"^│\s+([+-]\d[\d,]*\.\d\d) │", proc.stdout, re.M)
    assert changes, proc.stdout
    assert not [c for c in changes if float(c.replace(",", "")) == 0], proc.stdout
    figures = json.loads(bridge_plugins("compare", a, b, "--top", "1000", "--json").stdout)
    rows = [r for k in ("ops", "kernels") for s in ("regressions", "improvements") for r in figures[f"{k}_{s}"]]
    assert rows and all(f"{abs(r['delta_us']) / 1000:.2f}" != "0.00" for r in rows)


def test_the_job_log_and_the_artifact_list_give_a_size_in_the_same_units(tmp_path, caplog):
    import torch

    x = torch.randn(16, 16)
    cfg = ProfilingConfig(use_pytorch_profiler=True, profile_step_start=1, profile_step_end=3, output_dir=str(tmp_path))
    with caplog.at_level(logging.INFO, logger="bridge_plugins"), ProfilingController(cfg, rank=0, world_size=1) as ctl:
        for step in range(4):
            with ctl.step(step):
                (x @ x).relu().sum()
    (trace,) = ctl.artifacts
    logged = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("wrote PyTorch trace"))
    size = fmt_bytes(Path(trace).stat().st_size)
    assert size.endswith("KiB") and f"({size})" in logged, logged


def test_nsys_dryrun_without_nsys_does_not_tell_to_use_dryrun(tmp_path):
    proc = run(
        sys.executable,
        "-m",
        "recipes",
        "--profiler",
        "nsys",
        "--dryrun",
        "--base-dir",
        str(tmp_path),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{system_path_without_nsys()}",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "exp.dryrun()" not in proc.stderr and "will refuse" not in proc.stderr, proc.stderr
    assert "[recipes] note: no 'nsys' binary on PATH here" in proc.stderr, proc.stderr
    assert "nsys profile" in proc.stdout
