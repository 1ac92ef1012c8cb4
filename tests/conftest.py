"""pytest configuration. Helpers live in tests/support.py (import them from there)."""

import gc
import logging
import os
import signal

import pytest

# Started with SIGINT ignored (`cmd &` in a non-interactive script, nohup-like runners), pytest would
# pass that to every process a test starts, and the Ctrl-C tests would see their job ignore the
# Ctrl-C they send. Those tests mean a job started from a terminal: Python's own handler here, so
# children start with the default action. (The test of a job started with SIGINT ignored sets it.)
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _bridge_plugins_logs(caplog):
    """Capture bridge_plugins' log records at INFO so tests can assert on warnings and artifact lines.

    At the end of every test, collect garbage: NeMo Run's ``Experiment.__del__`` removes the root
    logger's FIRST handler (``deconfigure_logging``). An Experiment left in a reference cycle by one
    test and collected during a later one took that test's caplog handler with it, so its log
    assertions saw nothing (seen once in CI, in test_reliability_config). Collected here, it can
    only take this test's handler, after the test is over.
    """
    caplog.set_level(logging.INFO, logger="bridge_plugins")
    # What exists before the test is set aside (gc.freeze), so the collection after it looks only at
    # the test's own objects: a full collection of a heap holding torch and NeMo Run took about 0.4 s
    # per test, most of the quick lane's time. What an earlier test left was collected after it.
    gc.freeze()
    yield
    gc.collect()


def _slurm_problem():
    """Why the local Slurm cluster cannot be used, or None when it answers."""
    import shutil
    import subprocess

    if os.environ.get("BRIDGE_SLURM_UNAVAILABLE"):
        return os.environ["BRIDGE_SLURM_UNAVAILABLE"]
    if shutil.which("sbatch") is None:
        return "no sbatch on PATH: run scripts/slurm/up.sh (or scripts/test.sh, which does)"
    for cmd in (["scontrol", "ping"], ["sacct", "-n", "-X", "-S", "now"]):
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"{' '.join(cmd)} failed: {e}"
        if proc.returncode != 0 or (cmd[0] == "scontrol" and "UP" not in proc.stdout):
            return f"{' '.join(cmd)} failed: {(proc.stdout + proc.stderr).strip()[:300]}"
    return None


@pytest.fixture(scope="session")
def slurm_cluster():
    """The local Slurm cluster (scripts/slurm/up.sh). Skips without one, except under CI=true,
    where a skipped Slurm test would let CI pass without ever submitting a job: there it fails."""
    problem = _slurm_problem()
    if problem:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"Slurm tests cannot be skipped under CI=true: {problem}")
        pytest.skip(f"no Slurm cluster: {problem}")
    return {
        "account": os.environ.get("BRIDGE_SLURM_ACCOUNT", "bridge"),
        "partition": os.environ.get("BRIDGE_SLURM_PARTITION", "debug"),
    }


@pytest.fixture
def nemo_home(tmp_path, monkeypatch):
    """An isolated NeMo Run home and job indexes per test (nothing lands in ~/.nemo_run).

    Also gives the test an empty stdin: NeMo Run's LocalTunnel and Slurm packaging run shell
    commands through invoke, which reads stdin, and pytest's captured stdin raises on read.
    """
    import importlib
    import sys

    from nemo_run.config import get_nemorun_home, set_nemorun_home

    nr_local = importlib.import_module("nemo_run.run.torchx_backend.schedulers.local")
    nr_slurm = importlib.import_module("nemo_run.run.torchx_backend.schedulers.slurm")
    old = get_nemorun_home()
    home = tmp_path / "nemo_home"
    set_nemorun_home(str(home))
    monkeypatch.setattr(nr_local, "LOCAL_JOB_DIRS", str(home / ".local_jobs.json"))
    monkeypatch.setattr(nr_slurm, "SLURM_JOB_DIRS", str(home / ".slurm_jobs"))
    with open(os.devnull) as devnull:
        monkeypatch.setattr(sys, "stdin", devnull)
        yield home
    set_nemorun_home(old)
