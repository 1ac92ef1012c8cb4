"""A real Ray cluster on the local Slurm cluster, started the way a user starts one: NeMo Run's
``nemo_run.run.ray.cluster.RayCluster`` with a ``SlurmExecutor`` (one Ray node per Slurm node; the
head on the first). See docs/scale.md for the user's side of it.

NeMo Run's cluster script is written for container clusters (pyxis) and a newer Slurm; the
stand-ins in tests/helpers/ray_sbatch_shims/ (srun, scontrol; each says why) let it run here. Everything it starts runs inside the Slurm job,
so cancelling the job (``RayCluster.stop``) stops it; ``stop`` then kills by PID what this cluster's
process tracking cannot reach (it says why) and returns any other process left.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import nemo_run as run

from tests.slurm_support import job_env
from tests.support import ROOT

SHIMS = ROOT / "tests" / "helpers" / "ray_sbatch_shims"
CLIENT_PORT = 10001


@dataclass
class RayOnSlurm:
    cluster: object  # nemo_run.run.ray.cluster.RayCluster
    address: str  # ray://<head ip>:10001, for a driver outside the cluster
    head_ip: str
    temp_dir: Path
    logs: Path
    job_id: str


def node_ip(k: int) -> str:
    """Node nK's address on the local cluster's bridge (scripts/slurm/env.sh)."""
    return f"{os.environ.get('BRIDGE_SLURM_SUBNET', '10.197.23')}.{10 + k}"


def auth_env(temp_dir: Path) -> dict[str, str]:
    """Ray's token authentication with a token of this cluster's own, for its nodes, NeMo Run's
    ``ray status`` checks and the driver. (Ray 2.60 turns it on by itself when ~/.ray/auth_token
    exists, and then a client without RAY_AUTH_MODE=token is refused: set it explicitly.)"""
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(temp_dir / "auth_token")}


def _cluster_processes(temp_dir: Path) -> list[int]:
    """PIDs of the Ray processes of this cluster: their command line names its temp dir, or they
    are task workers (``ray::...``) whose environment does."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes()
            env = (proc / "environ").read_bytes() if cmd.startswith(b"ray::") else b""
        except OSError:
            continue
        if str(temp_dir).encode() in cmd or str(temp_dir).encode() in env:
            pids.append(int(proc.name))
    return pids


def start(base: Path, cluster: dict, timeout: float = 240.0) -> RayOnSlurm:
    """A 2-node Ray cluster as a Slurm job of ours; returns once every node has joined."""
    from nemo_run.run.ray.cluster import RayCluster

    temp_dir = Path(f"/tmp/bpray-{os.getpid()}")  # short: Ray's socket paths must stay under 108 bytes
    temp_dir.mkdir(mode=0o700)
    token = temp_dir / "auth_token"
    token.write_text(secrets.token_hex(32))
    env = job_env(
        SHIMS,
        RAY_TEMP_DIR=str(temp_dir / "head"),  # NeMo Run's script passes it to the head's --temp-dir
        RAY_TMPDIR=str(temp_dir / "worker"),  # the worker nodes' (no --temp-dir there)
        CPUS_PER_WORKER="1",  # srun --cpus-per-task of each Ray node (NeMo Run's default is 128)
        RAY_DISABLE_DOCKER_CPU_WARNING="1",
        **auth_env(temp_dir),
    )
    executor = run.SlurmExecutor(
        account=cluster["account"],
        partition=cluster["partition"],
        nodes=2,
        ntasks_per_node=1,
        time="00:15:00",
        tunnel=run.LocalTunnel(job_dir=str(base / "ray")),
        env_vars=env,
    )
    name = f"bp-ray-{os.getpid()}"  # NeMo Run reuses a running cluster of the same name
    ray_cluster = RayCluster(name=name, executor=executor, log_level="WARNING")
    logging.getLogger("nemo_run").setLevel(logging.WARNING)
    cluster_dir = base / "ray" / name
    # sbatch's --output points into logs/, which NeMo Run creates only inside the job: without it
    # Slurm cannot open the output file and the job fails at once (exit 53).
    (cluster_dir / "logs").mkdir(parents=True, exist_ok=True)
    ray_cluster.start(wait_until_ready=False)
    info = cluster_dir / "ray_cluster_info.json"
    deadline = time.monotonic() + timeout
    while not info.exists():  # the script writes it once every node has joined (NeMo Run polls every 30 s)
        state = ray_cluster.status(display=False)
        if state["state"] in ("FAILED", "CANCELLED", "TIMEOUT", "COMPLETED") or time.monotonic() > deadline:
            logs = "\n".join(f"--- {p}\n{p.read_text()[-3000:]}" for p in sorted((cluster_dir / "logs").glob("*")))
            ray_cluster.stop()
            raise RuntimeError(f"the Ray cluster did not come up ({state}):\n{logs}")
        time.sleep(0.5)
    head_ip = json.loads(info.read_text())["head_ip"]
    job_id = str(ray_cluster.status(display=False)["job_id"])
    return RayOnSlurm(ray_cluster, f"ray://{head_ip}:{CLIENT_PORT}", head_ip, temp_dir, cluster_dir / "logs", job_id)


def _kill_wait() -> int:
    """Slurm's KillWait, in seconds: how long after a task's SIGTERM it sends the SIGKILL."""
    config = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"^KillWait\s*=\s*(\d+) sec", config, re.M)
    assert found, "scontrol show config lists no KillWait"
    return int(found.group(1))


def _stat(pid: int) -> tuple[str, int, int]:
    """A process's name, parent and process group, from /proc/PID/stat."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) state"
    return stat[stat.index("(") + 1 : stat.rindex(")")], int(fields[1]), int(fields[2])


def _groups(pids: list[int]) -> set[int]:
    """The process groups of ``pids``: Slurm tasks' (slurmstepd starts each task in a group of its own)."""
    groups = set()
    for pid in pids:
        with contextlib.suppress(OSError, ValueError, IndexError):
            groups.add(_stat(pid)[2])
    return groups - {0, 1, os.getpgid(0)}


def _escaped(groups: set[int]) -> list[int]:
    """The processes of ``groups`` that have init above them, not a slurmstepd: out of reach of
    proctrack/linuxproc, which finds a step's processes by walking down from its slurmstepd."""
    escaped = []
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError):
            if not proc.name.isdigit() or _stat(int(proc.name))[2] not in groups:
                continue
            up = int(proc.name)
            while up > 1:
                name, up, _ = _stat(up)
                if name == "slurmstepd":
                    break
            else:
                escaped.append(int(proc.name))
    return escaped


def stop(ray: RayOnSlurm, timeout: float = 60.0) -> list[int]:
    """Cancel the cluster's job, wait for its processes to end and for it to leave the queue; kills
    (by PID) and returns those of its processes that Slurm did not end.

    The local cluster tracks a task's processes with proctrack/linuxproc (scripts/slurm/up.sh), by
    walking down from its slurmstepd: at the SIGTERM the head's ``ray start --block`` (with its GCS
    and autoscaler monitor) and NeMo Run's health loop's ``sleep 60`` outlive the shells that
    started them and are re-parented to init, out of reach of the SIGKILL that follows KillWait
    later. Left alone, Ray's end on its own timeouts ~30 s later, and the sleep holds the task's
    output open, so the job stays COMPLETING for 60 s (slurmstepd gives up on that output then)
    and the next test's job waits for the nodes. A real cluster tracks by cgroup, which reaches
    them: the cluster's tasks' processes that escaped are killed here at KillWait, as it would.
    (``RayCluster.stop()`` would wait, 60 s, for the job to leave the queue.)"""
    groups, kill_wait = _groups(_cluster_processes(ray.temp_dir)), _kill_wait() + 1  # and a second
    ray.cluster.backend.delete(wait=False)
    cancelled = time.monotonic()
    deadline = cancelled + timeout
    while time.monotonic() < deadline:
        if time.monotonic() > cancelled + kill_wait:
            for pid in _escaped(groups):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        queued = subprocess.run(["squeue", "-h", "-j", ray.job_id], capture_output=True, text=True, check=False)
        if not _cluster_processes(ray.temp_dir) and not queued.stdout.strip():
            break
        time.sleep(0.2)
    left = _cluster_processes(ray.temp_dir)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    # the head's client-server logs (each session a driver asked for) outlive the cluster, next to
    # its Slurm logs: what a failed connection's server side said
    for log in (ray.temp_dir / "head" / "session_latest" / "logs").glob("*ray_client_server*"):
        with contextlib.suppress(OSError):
            shutil.copy(log, ray.logs / log.name)
    subprocess.run(["rm", "-rf", str(ray.temp_dir)], check=False)
    return left
