"""``python -m recipes.train`` run by hand: kineto's USDT markers stay off the terminal, nothing else does."""

from __future__ import annotations

import sys

import pytest

from tests.support import run_job, trace_files

MARKER = "USDT:2026-11-30 18:58:24 16877:16877 SyncActivityProfilerHandler.cpp:52] profiler_start"


@pytest.mark.slow
def test_torch_itself_prints_usdt_markers_to_stderr():
    """The control: without our filter, a profiler start and stop print the markers."""
    code = "import torch\nwith torch.profiler.profile():\n    torch.ones(2) + 1\n"
    proc = run_job([sys.executable, "-c", code], timeout=120)
    assert "USDT:" in proc.stderr and "profiler_start" in proc.stderr


@pytest.mark.slow
def test_a_profiled_training_run_shows_no_usdt_markers(tmp_path):
    proc = run_job(
        [
            sys.executable,
            "-m",
            "recipes.train",
            "profiling.use_pytorch_profiler=true",
            "train.train_iters=3",
            "profiling.profile_step_start=1",
            "profiling.profile_step_end=2",
            f"profiling.output_dir={tmp_path}",
        ]
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "USDT" not in proc.stderr and "USDT" not in proc.stdout
    assert [p.name for p in trace_files(tmp_path)[0]] == ["rank0_steps1-1.pt.trace.json.gz"]


def test_everything_else_on_stderr_gets_through_even_when_the_job_is_killed():
    code = (
        "import os, sys\n"
        "from recipes.stderr_filter import filter_kineto_markers\n"
        "filter_kineto_markers()\n"
        "os.write(2, b'first\\n')\n"
        f"os.write(2, b'{MARKER}\\n')\n"
        f"os.write(2, b'[default0]:{MARKER}\\n')\n"
        "os.write(2, b'USDT: a user line that mentions USDT\\n')\n"
        "sys.stderr.write('last words before SIGKILL\\n'); sys.stderr.flush()\n"
        "os.kill(os.getpid(), 9)\n"
    )
    proc = run_job([sys.executable, "-c", code], timeout=60)
    assert proc.returncode == -9
    assert proc.stderr.splitlines() == ["first", "USDT: a user line that mentions USDT", "last words before SIGKILL"]


def test_cuda_asked_for_where_there_is_none_is_a_clean_error():
    import torch

    if torch.cuda.is_available():
        return
    proc = run_job([sys.executable, "-m", "recipes.train", "train.device=cuda"], timeout=60)
    assert (
        proc.returncode == 2 and proc.stderr.startswith("error: train.device=cuda") and "Traceback" not in proc.stderr
    )
