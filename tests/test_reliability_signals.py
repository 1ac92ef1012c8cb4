"""Fault injection, issue 7.1: signals that arrive while a trace is being written never lose it.

Each test runs the real profiled job (tests/helpers/reliability_job.py) as its own process and
sends real signals at the worst moment: while ``with controller:`` exits and joins the background
export, a second SIGTERM while the first is being handled, and scancel's pattern under torchrun
(SIGTERM to the worker, then to the agent, which forwards another). Every case must end with the
complete trace under its final name, and nothing half-written left behind (no hidden staging
files, no uncompressed JSON in $TMPDIR).
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.reliability import Job, complete_trace_steps
from tests.support import VENV_BIN, free_port


def assert_complete_trace_and_nothing_else(job, steps):
    traces = job.traces()
    assert len(traces) == 1, f"traces: {traces}; stderr:\n{job.stderr[-3000:]}"
    assert complete_trace_steps(traces[0]) == steps
    assert job.left_behind() == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl_c"])
def test_signal_while_exit_joins_the_export_keeps_the_trace(tmp_path, sig):
    job = Job(tmp_path, start=1, end=11, steps=12, ops=8000)  # a window whose trace takes ~1 s to write
    job.wait_for("loop done")  # the window closed at step 10; its export runs in the background
    job.wait_for_compression()  # the job is in `with controller:`'s exit, waiting for the export
    job.proc.send_signal(sig)
    rc = job.finish()
    # the signal still ends the job, after the trace is written (Ctrl-C: as a KeyboardInterrupt)
    assert rc == -sig or (sig == signal.SIGINT and rc == 1 and "KeyboardInterrupt" in job.stderr), job.stderr[-3000:]
    assert "controller exited" not in job.lines
    assert_complete_trace_and_nothing_else(job, set(range(1, 11)))
    assert "held until" in job.stderr  # the signal did arrive while the trace was being written


def test_second_sigterm_while_the_first_is_handled_keeps_the_trace(tmp_path):
    job = Job(tmp_path, start=1, end=21, steps=60, ops=8000, sleep_after=0.1)  # a trace that takes ~2 s to write
    job.wait_for("step 20")  # window closed; its export runs in the background while training goes on
    job.wait_for_compression()
    job.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    job.proc.send_signal(signal.SIGTERM)
    second = time.time()
    rc = job.finish()
    assert rc == -signal.SIGTERM, job.stderr[-3000:]
    assert_complete_trace_and_nothing_else(job, set(range(1, 21)))
    # both signals came while the trace was being written (a second SIGTERM may then merge with the
    # first, which is handled only when the export thread lets go of the GIL, or be held)
    assert second < job.logged_at("wrote PyTorch trace")
    assert "SIGTERM received while the profile is being written: held until" in job.stderr


def test_scancel_under_torchrun_keeps_the_trace(tmp_path):
    """scancel: SIGTERM to the worker, then to torchrun's agent, which sends the worker another."""
    torchrun = [str(VENV_BIN / "torchrun"), "--nnodes", "1", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
                "--rdzv-endpoint", f"127.0.0.1:{free_port()}", "--no-python", str(VENV_BIN / "python")]
    job = Job(tmp_path, start=1, end=21, steps=60, ops=8000, sleep_after=0.1, cmd_prefix=torchrun)
    worker = job.pid()
    job.wait_for("step 20")  # window closed, export started
    job.wait_for_compression()
    os.kill(worker, signal.SIGTERM)
    time.sleep(0.3)
    job.proc.send_signal(signal.SIGTERM)
    second = time.time()
    job.finish()
    assert_complete_trace_and_nothing_else(job, set(range(1, 21)))
    assert second < job.logged_at("wrote PyTorch trace")
    assert "SIGTERM received while the profile is being written: held until" in job.stderr  # the agent was signalled while the trace was written
