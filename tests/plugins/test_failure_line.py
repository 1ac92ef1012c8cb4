"""Why a job under nsys failed, in one line, without launching one: which log line is chosen
(nsys_outcome.failure_line, on real log files) and which jobs the driver's report names (a real
Experiment's wait for jobs that were never launched, so NeMo Run waits for nothing)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import nemo_run as run
import pytest
from nemo_run.run.experiment import Job
from torchx.specs.api import AppState

from bridge_plugins import NsysPlugin
from bridge_plugins.plugins.nsys_outcome import WRAPPER_ERROR, failure_line, say_why_failed
from recipes.tiny_gpt import tiny_gpt_script
from tests.launch_support import slurm

pytestmark = pytest.mark.usefixtures("nemo_home")  # an isolated NeMo Run home per test (tests/conftest.py)


def _log(path, text: bytes | str, mtime: int):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    os.utime(path, (mtime, mtime))


def test_no_log_is_none(tmp_path):
    _log(tmp_path / "notes.txt", "not a log\n", 100)
    assert failure_line(tmp_path) is None


def test_without_the_wrappers_line_the_newest_logs_last_line_stripped(tmp_path):
    _log(tmp_path / "z_old.log", "older last line\n", 100)  # by name it would come last
    _log(tmp_path / "sub" / "a_new.out", "  first\n  newest last line  \n\n   \n", 200)
    _log(tmp_path / "newest.txt", "not a log\n", 300)
    assert failure_line(tmp_path) == "newest last line"


def test_an_empty_newest_log_leaves_the_line_of_the_one_before(tmp_path):
    _log(tmp_path / "a.log", "the real reason\n", 100)
    _log(tmp_path / "b.log", "\n  \n", 200)
    assert failure_line(tmp_path) == "the real reason"


def test_the_wrappers_line_wins_from_where_it_starts_oldest_log_first(tmp_path):
    _log(tmp_path / "a.out", f"0: srun said {WRAPPER_ERROR} on node1: nsys too old {WRAPPER_ERROR} 2\nafter\n", 100)
    _log(tmp_path / "b.log", f"{WRAPPER_ERROR} later\nlast\n", 200)
    _log(tmp_path / "c.log", b"undecodable \xff last\n", 300)
    assert failure_line(tmp_path) == f"{WRAPPER_ERROR} on node1: nsys too old {WRAPPER_ERROR} 2"


def test_undecodable_bytes_are_replaced(tmp_path):
    _log(tmp_path / "c.log", b"undecodable \xff last\n", 300)
    assert failure_line(tmp_path) == "undecodable \ufffd last"


def _job(job_id, executor, state):
    return Job(id=job_id, task=run.Script(inline="true"), executor=executor, state=state)


def test_a_failed_job_on_the_plugins_executor_is_said_once_with_its_reason(tmp_path, capsys):
    mine, other, no_dir = run.LocalExecutor(), run.LocalExecutor(), run.LocalExecutor()
    mine.job_dir, other.job_dir, no_dir.job_dir = str(tmp_path), str(tmp_path), str(tmp_path / "missing")
    _log(tmp_path / "log.out", "Traceback\nRuntimeError: boom\n", 100)
    with run.Experiment("failure-line", log_level="WARN") as exp:
        say_why_failed("NsysPlugin", mine)
        say_why_failed("NsysPlugin", mine)  # registered once
        say_why_failed("PyTorchProfilerPlugin", no_dir)
        capsys.readouterr()
        jobs = [
            _job("ok", mine, AppState.SUCCEEDED),
            _job("theirs", other, AppState.FAILED),
            _job("j1", mine, AppState.FAILED),
            _job("j2", no_dir, AppState.FAILED),
            SimpleNamespace(id="group", executors=[mine], state=AppState.FAILED, handles=[], launched=False),
        ]  # the last is shaped like a JobGroup: executors, no executor
        exp._wait_for_jobs(jobs=jobs)  # what exp.run() calls; none was launched, so none is waited for
        err = capsys.readouterr().err.splitlines()
    assert err == [
        f"[bridge_plugins] NsysPlugin: job j1 FAILED: RuntimeError: boom (logs under {tmp_path})",
        f"[bridge_plugins] PyTorchProfilerPlugin: job j2 FAILED: no log was written (logs under {tmp_path / 'missing'})",
    ]


def test_outside_an_experiment_nothing_is_registered_but_the_executor_is_marked():
    executor = run.LocalExecutor()
    say_why_failed("NsysPlugin", executor)
    assert executor._bridge_plugins_says_why_failed is True


def test_nsys_plugin_registers_the_report_under_its_own_name(capsys):
    with run.Experiment("failure-line", log_level="WARN") as exp:
        exp.add(tiny_gpt_script(), executor=slurm(), plugins=[NsysPlugin()], name="job")
        (job,) = exp.jobs
        job.state = AppState.FAILED
        capsys.readouterr()
        exp._wait_for_jobs(jobs=[job])
        err = capsys.readouterr().err.splitlines()
    assert err == [
        f"[bridge_plugins] NsysPlugin: job {job.id} FAILED: no log was written (logs under {job.executor.job_dir})"
    ]
