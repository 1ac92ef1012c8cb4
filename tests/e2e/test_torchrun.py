"""Real multi-process runs: torchrun ranks of the recipe, and SIGTERM inside the window."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import pytest

from tests.support import ROOT, clean_env, run_job, torchrun_cmd, trace_files, trace_steps

pytestmark = pytest.mark.integration


def train_args(out, start, end, ranks, iters=8, extra=()):
    return [
        "-m",
        "recipes.train",
        "profiling.use_pytorch_profiler=true",
        f"profiling.profile_step_start={start}",
        f"profiling.profile_step_end={end}",
        f"profiling.profile_ranks=[{','.join(map(str, ranks))}]",
        f"profiling.output_dir={out}",
        f"train.train_iters={iters}",
        "model.hidden_size=32",
        *extra,
    ]


@pytest.mark.parametrize(
    "start,end,ranks,expect_ranks",
    [(3, 6, [0, 1], [0, 1]), (0, 2, [], [0, 1]), (2, 5, [1], [1]), (4, 5, [0, 3], [0])],
    ids=["window3-5_ranks01", "window0-1_all", "window2-4_rank1_only", "rank_outside_world"],
)
def test_two_rank_torchrun(tmp_path, start, end, ranks, expect_ranks):
    proc = run_job(torchrun_cmd(2, train_args(tmp_path, start, end, ranks)))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    files = trace_files(tmp_path)
    assert sorted(files) == expect_ranks, files
    for rank, paths in files.items():
        assert len(paths) == 1
        assert paths[0].name == f"rank{rank}_steps{start}-{end - 1}.pt.trace.json.gz"
        assert trace_steps(paths[0]) == set(range(start, end))
    assert "training 8 steps on 2 rank(s)" in proc.stdout
    if 3 in ranks:
        assert "lists rank(s) [3] outside the world of 2" in proc.stdout


def test_job_tolerates_nemo_runs_trailing_empty_argument(tmp_path):
    proc = run_job([sys.executable, *train_args(tmp_path, 1, 3, [0], iters=3), ""])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert trace_steps(trace_files(tmp_path)[0][0]) == {1, 2}


def test_bad_override_fails_before_training(tmp_path):
    proc = run_job([sys.executable, "-m", "recipes.train", "profiling.profile_rank=[0]"])
    assert proc.returncode == 2
    assert "unknown override key 'profiling.profile_rank'" in proc.stderr and "profiling.profile_ranks" in proc.stderr
    assert "training" not in proc.stdout


SIGTERM_JOB = textwrap.dedent(
    """
    import sys, time, logging
    import torch
    from bridge_plugins import ProfilingConfig, ProfilingController
    logging.basicConfig(level=logging.INFO, stream=sys.stdout)
    x = torch.randn(64, 64)
    cfg = ProfilingConfig(use_pytorch_profiler=True, profile_step_start=2, profile_step_end=9, output_dir=sys.argv[1])
    with ProfilingController(cfg, rank=0) as ctl:
        for step in range(20):
            with ctl.step(step):
                (x @ x).sum()
                if step == 4:
                    print("IN STEP 4", flush=True)
                    time.sleep(60)
    print("NOT REACHED", flush=True)
    """
)


def test_sigterm_inside_the_window_leaves_a_complete_trace(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", SIGTERM_JOB, str(tmp_path)],
        cwd=ROOT,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    deadline = time.monotonic() + 120
    for line in proc.stdout:
        lines.append(line)
        if "IN STEP 4" in line or time.monotonic() > deadline:
            break
    proc.send_signal(signal.SIGTERM)
    rest, _ = proc.communicate(timeout=60)
    out = "".join(lines) + rest
    assert proc.returncode == -signal.SIGTERM, out  # the job still dies of SIGTERM, as it would have
    assert "NOT REACHED" not in out
    path = trace_files(tmp_path)[0][0]
    assert path.name == "rank0_steps2-4.pt.trace.json.gz"
    assert trace_steps(path) == {2, 3, 4}
    assert "SIGTERM received during step 4" in out and "captured steps 2-4" in out
    assert [p.name for p in (tmp_path / "torch_profile").iterdir()] == [path.name]  # no temp file left


SIGTERM_DURING_EXPORT_JOB = textwrap.dedent(
    """
    import sys, time, logging
    import torch
    from bridge_plugins import ProfilingConfig, ProfilingController
    from recipes.config import ModelConfig
    from recipes.model import build_training, train_step
    logging.basicConfig(level=logging.INFO, stream=sys.stdout)
    model, opt, data = build_training(ModelConfig(hidden_size=256, num_layers=4), 128, 8, torch.device("cpu"))
    cfg = ProfilingConfig(use_pytorch_profiler=True, profile_step_start=1, profile_step_end=6, output_dir=sys.argv[1],
                          record_shapes=True, pytorch_profiler_with_stack=True)
    with ProfilingController(cfg, rank=0) as ctl:
        for step in range(20):
            with ctl.step(step):
                if step == 6:
                    print("WINDOW CLOSED", flush=True)
                    time.sleep(60)
                train_step(model, opt, data)
    print("NOT REACHED", flush=True)
    """
)


def test_sigterm_while_the_trace_is_written_in_the_background_waits_for_it(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", SIGTERM_DURING_EXPORT_JOB, str(tmp_path)],
        cwd=ROOT,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if "WINDOW CLOSED" in line:
            break
    proc.send_signal(signal.SIGTERM)
    rest, _ = proc.communicate(timeout=120)
    out = "".join(lines) + rest
    assert proc.returncode == -signal.SIGTERM, out
    # the export was still running when SIGTERM came (its log line follows the marker) and finished
    assert "wrote PyTorch trace" in rest, out
    path = trace_files(tmp_path)[0][0]
    assert trace_steps(path) == {1, 2, 3, 4, 5}
    assert [p.name for p in (tmp_path / "torch_profile").iterdir()] == [path.name]


SIGTERM_DURING_CLOSE_JOB = textwrap.dedent(
    """
    import os, signal, sys, threading, time, logging
    from pathlib import Path
    import torch
    from bridge_plugins import ProfilingConfig, ProfilingController
    logging.basicConfig(level=logging.INFO, stream=sys.stdout)
    out = Path(sys.argv[1])

    def send_sigterm_once_the_close_writes():
        # the writer creates torch_profile/ right before it exports, i.e. in the middle of the close
        while not (out / "torch_profile").exists():
            time.sleep(0.0005)
        print("SENDING SIGTERM", flush=True)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=send_sigterm_once_the_close_writes, daemon=True).start()
    x = torch.randn(128, 128)
    cfg = ProfilingConfig(use_pytorch_profiler=True, profile_step_start=1, profile_step_end=4, output_dir=str(out),
                          background_export=False, record_shapes=True, pytorch_profiler_with_stack=True)
    with ProfilingController(cfg, rank=0) as ctl:
        for step in range(200):
            with ctl.step(step):
                for _ in range(200):
                    x = torch.tanh(x @ x)
            time.sleep(0.01)
    print("NOT REACHED", flush=True)
    """
)


def test_sigterm_in_the_middle_of_closing_the_window_still_writes_the_trace(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", SIGTERM_DURING_CLOSE_JOB, str(tmp_path)],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == -signal.SIGTERM, out
    assert "SENDING SIGTERM" in out and "NOT REACHED" not in out
    path = trace_files(tmp_path)[0][0]
    assert trace_steps(path) == {1, 2, 3}
    assert [p.name for p in (tmp_path / "torch_profile").iterdir()] == [path.name]
