"""Helpers for tests that submit real jobs to the local Slurm cluster (scripts/slurm/up.sh).

Jobs go through ``run.SlurmExecutor`` with ``run.LocalTunnel`` and ``sbatch``; a finished job is
read back as a :class:`Ran` (NeMo Run status, Slurm id, the ``sacct`` line, the job's logs).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import warnings
from pathlib import Path

import nemo_run as run
import pytest

from bridge_plugins.plugins import ProfilingPluginWarning

# assert_window_traces: imported from here by the multi-node tests
from tests.support import ROOT, VENV_BIN, assert_window_traces, clean_env, job_logs  # noqa: F401

SLURM_LOG_SUFFIXES = (".out", ".err", ".log")
"""sbatch writes each job's output to ``.out`` (and ``.err``) files; NeMo Run keeps ``.log`` ones."""
SACCT_FIELDS = "JobID,JobName,Account,State,ExitCode,Elapsed,AllocCPUS,NNodes,NodeList"
"""The allocation's accounting line (``sacct -X``) that tests check and report."""


def cluster_nodes() -> list[str]:
    """The cluster's node names (``sinfo -N``), in Slurm's order."""
    proc = subprocess.run(["sinfo", "-h", "-N", "-o", "%N"], capture_output=True, text=True, timeout=20)
    return sorted(set(proc.stdout.split()), key=lambda n: (len(n), n))


def require_nodes(count: int) -> list[str]:
    """The node names when the cluster has at least ``count`` nodes; otherwise skip (fail under
    CI=true, where a skipped multi-node test would let CI pass without ever running one)."""
    nodes = cluster_nodes()
    if len(nodes) < count:
        why = (
            f"the local Slurm cluster has {len(nodes)} node(s) {nodes}, these tests need {count}: "
            f"bring it up with 'scripts/slurm/up.sh --nodes {count}'"
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(why)
        pytest.skip(why)
    return nodes


def job_env(path_prefix: Path | None = None, **extra: str) -> dict[str, str]:
    """PATH with the venv's bin first (sbatch exports it to the job), PYTHONPATH = repo root."""
    path = f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    if path_prefix is not None:
        path = f"{path_prefix}{os.pathsep}{path}"
    return {"PATH": path, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", **extra}


def slurm_executor(
    cluster,
    base_dir: Path,
    *,
    nodes: int = 1,
    ntasks_per_node: int = 2,
    launcher=None,
    env: dict[str, str] | None = None,
) -> run.SlurmExecutor:
    executor = run.SlurmExecutor(
        account=cluster["account"],
        partition=cluster["partition"],
        nodes=nodes,
        ntasks_per_node=ntasks_per_node,
        time="00:05:00",
        # LocalTunnel copies nothing: its job_dir must be the experiments dir NeMo Run writes to.
        tunnel=run.LocalTunnel(job_dir=str(base_dir / "experiments")),
        packager=run.Packager(),
        env_vars=env or job_env(),
    )
    if launcher is not None:
        executor.launcher = launcher
    return executor


def sacct_line(slurm_id: str, fields: str = "JobID,State,ExitCode", timeout: float = 30.0) -> str:
    """The allocation's ``sacct -X -P`` line, once sacct has a final state for it."""
    line = ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        proc = subprocess.run(
            ["sacct", "-j", slurm_id, "-X", "-n", "-P", "-o", fields], capture_output=True, text=True, timeout=20
        )
        line = proc.stdout.strip()
        if line and not any(s in line for s in ("PENDING", "RUNNING", "COMPLETING")):
            return line
        time.sleep(1)
    return line


class Ran:
    """What a finished Slurm job left: NeMo Run status, Slurm id, sacct line, job dir."""

    def __init__(self, exp: run.Experiment, status: dict):
        (self.info,) = status.values()
        self.exp = exp
        self.job = exp.jobs[0]
        self.job_dir = Path(self.job.executor.job_dir)
        self.slurm_id = str(self.info["job_id"])
        self.sacct = sacct_line(self.slurm_id)
        self.full_logs = job_logs(self.job_dir, SLURM_LOG_SUFFIXES)  # to search
        self.logs = self.full_logs[-8000:]  # the end, for failure messages (multi-node torchrun logs are long)

    def sbatch_text(self) -> str:
        return Path(self.job.executor.experiment_dir, f"{self.job.executor.job_name}_sbatch.sh").read_text()

    def accounting(self) -> dict[str, str]:
        """The allocation's SACCT_FIELDS from sacct, by name."""
        values = sacct_line(self.slurm_id, SACCT_FIELDS).split("|")
        return dict(zip(SACCT_FIELDS.split(","), values, strict=False))

    def assert_succeeded(self) -> None:
        assert "SUCCEEDED" in str(self.info["status"]), f"NeMo Run status {self.info['status']}\n{self.logs}"
        assert re.fullmatch(r"\d+", self.slurm_id), self.info
        assert self.sacct == f"{self.slurm_id}|COMPLETED|0:0", f"sacct: {self.sacct!r}\n{self.logs}"


def run_on_slurm(base_dir: Path, task, executor, plugins, name: str = "tiny_gpt") -> Ran:
    """Submit through sbatch, wait for the end (Experiment.__exit__), read the final status."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ProfilingPluginWarning)  # CPU: nsys/memory history warn; fine
        with run.Experiment("slurmtest", base_dir=str(base_dir), enable_goodbye_message=False, log_level="WARN") as exp:
            exp.add(task, executor=executor, plugins=plugins, name=name)
            exp.run(detach=False)
    return Ran(exp, exp.status(return_dict=True))


def read_placements(record_dir: Path) -> list[dict]:
    """The records tests/slurm_job.py's job wrote, one per process, sorted by global rank."""
    records = [json.loads(p.read_text()) for p in sorted(Path(record_dir).glob("placement.*.json"))]
    return sorted(records, key=lambda r: int(r["rank"]))


def assert_placement(records, nodes, ntasks_per_node: int, world_size: int) -> None:
    """Ranks are laid out node by node, and each process's host is the node its SLURM_NODEID names."""
    assert [int(r["rank"]) for r in records] == list(range(world_size)), records
    for r in records:
        rank, env = int(r["rank"]), r["env"]
        node_id = rank // ntasks_per_node
        assert env["SLURM_NODEID"] == str(node_id), r
        assert r["host"] == nodes[node_id] == env["SLURMD_NODENAME"], r
        assert env["WORLD_SIZE"] == str(world_size), r
        assert env["LOCAL_RANK"] == str(rank % ntasks_per_node), r


def run_main_job(slurm_cluster: dict, base_dir: Path, *flags: str, timeout: int = 300) -> tuple[str, Path]:
    """``python -m recipes --executor slurm`` on the local cluster with ``flags``, as a user types it;
    its stdout and the job directory it names, once it has succeeded."""
    cluster = ["--account", slurm_cluster["account"], "--partition", slurm_cluster["partition"]]
    proc = subprocess.run(
        [sys.executable, "-m", "recipes", "--executor", "slurm", *cluster, *flags, "--base-dir", str(base_dir)],
        cwd=ROOT,
        env=clean_env(NEMORUN_HOME=str(base_dir / "nemo_home")),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    m = re.search(r"job directory: (\S+)", proc.stdout)
    assert m, proc.stdout[-4000:]
    return proc.stdout, Path(m.group(1))
