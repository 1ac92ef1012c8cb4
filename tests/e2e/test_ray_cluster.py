"""``--ray``: the per-trace work on a real 2-node Ray cluster, started through NeMo Run's own
``RayCluster`` on the local 2-node Slurm cluster (tests/ray_support.py), driven from outside it
(``ray://HEAD:10001``), as a user on a login node would.

- summary through Ray (and with RAY_ADDRESS alone) prints exactly what a local ``--jobs 1`` prints (stdout and
  stderr), broken traces included: a trace a worker cannot read is a skipped line, as locally;
- the tasks ran on both nodes;
- a worker process killed (SIGKILL, by PID) while it reads a trace is retried by Ray, and the
  output is still the local one.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.analysis_scale import build
from tests import ray_support
from tests.analysis.gpu_traces import FIXTURES, JOBS
from tests.slurm_support import require_nodes
from tests.support import ROOT

pytestmark = [pytest.mark.slurm, pytest.mark.integration, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def ray_cluster(slurm_cluster, tmp_path_factory):
    require_nodes(2)
    with pytest.MonkeyPatch.context() as mp, open(os.devnull) as devnull:
        mp.setattr(sys, "stdin", devnull)  # NeMo Run's LocalTunnel runs commands that read stdin
        cluster = ray_support.start(tmp_path_factory.mktemp("raycluster"), slurm_cluster)
        try:
            yield cluster
        finally:
            left = ray_support.stop(cluster)
    assert left == [], f"Ray processes outlived the cluster's Slurm job (killed now): {left}"


def cli(*args, env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess | subprocess.Popen:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    environ.update(PYTHONPATH=str(ROOT), **(env or {}))
    cmd = [sys.executable, "-m", "bridge_plugins", *map(str, args)]
    if kw.pop("background", False):
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=environ)


def without_retries(stderr: str) -> str:
    """``stderr`` less the lines of a connection asked for again (``ray_map._connect``: a busy head
    may fail to start a session, as the suite under load once saw), of which there are at most
    ``CONNECT_TRIES - 1``."""
    from bridge_plugins.analysis.ray_map import CONNECT_TRIES, RETRY_PREFIX

    lines = stderr.splitlines(keepends=True)
    kept = [line for line in lines if not line.startswith(RETRY_PREFIX)]
    assert len(lines) - len(kept) < CONNECT_TRIES, stderr
    return "".join(kept)


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> list[Path]:
    """16 traces of a many-rank job: the GPU fixtures and copies of them, one truncated, one not JSON."""
    d = tmp_path_factory.mktemp("traces")
    names = JOBS["job128"] + JOBS["job2"]
    for i in range(14):
        shutil.copy(FIXTURES / names[i % 3], d / f"r{i:02d}_{names[i % 3]}")
    data = (FIXTURES / names[2]).read_bytes()
    (d / "r14_cut.json.gz").write_bytes(data[: len(data) // 3])
    (d / "r15_not_json.json.gz").write_bytes(gzip.compress(b"{ this is not json"))
    return sorted(d.iterdir())


def test_summary_on_ray_prints_what_a_local_run_prints(ray_cluster, traces, tmp_path):
    ray_env = ray_support.auth_env(ray_cluster.temp_dir)
    local = cli("summary", "--json", *traces, "--jobs", "1")
    assert local.returncode == 0 and local.stderr.count("skipped") == 2, local.stderr
    on_ray = cli("summary", "--json", *traces, "--ray", ray_cluster.address, env=ray_env)
    assert on_ray.returncode == 0, on_ray.stderr
    assert on_ray.stdout == local.stdout
    assert without_retries(on_ray.stderr) == local.stderr  # the two broken traces, skipped with the same line
    # RAY_ADDRESS alone means Ray too; the terminal tables as well
    local = cli("summary", *traces[:6], "--jobs", "1")
    on_ray = cli("summary", *traces[:6], env={"RAY_ADDRESS": ray_cluster.address, **ray_env})
    assert (on_ray.returncode, on_ray.stdout, without_retries(on_ray.stderr)) == (0, local.stdout, local.stderr)


WHERE = """
import json, sys
from bridge_plugins.analysis.parallel import Workers
from bridge_plugins.analysis.pipeline import summarize_trace
from bridge_plugins.analysis.trace.reader import TraceError
done = Workers(ray_address=sys.argv[1]).map(summarize_trace, sys.argv[2:], TraceError)
print(json.dumps([[str(d.path), d.node, d.error is None] for d in done]))
"""


def test_tasks_run_on_both_nodes(ray_cluster, traces):
    """Where each trace was read (``Done.node``), in a driver process of its own like the CLI's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(PYTHONPATH=str(ROOT), **ray_support.auth_env(ray_cluster.temp_dir))
    proc = subprocess.run(
        [sys.executable, "-c", WHERE, ray_cluster.address, *map(str, traces)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    done = json.loads(proc.stdout)
    assert [d[0] for d in done] == [str(t) for t in traces]
    assert [d[2] for d in done].count(False) == 2  # the two broken traces
    nodes = {d[1] for d in done}
    assert nodes == {ray_cluster.head_ip, ray_support.node_ip(2)}, nodes


def _reading_workers() -> list[int]:
    """PIDs of Ray worker processes running our per-trace task (Ray titles them ``ray::_read``)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (proc / "cmdline").read_bytes().startswith(b"ray::_read"):
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def test_a_worker_killed_mid_read_is_retried(ray_cluster, tmp_path):
    big = tmp_path / "big"
    big.mkdir()
    build(big / "r0.json", 40)  # ~1-2 s to read here: a task to kill in the middle of
    for i in range(1, 4):
        os.link(big / "r0.json", big / f"r{i}.json")
    files = sorted(big.iterdir())
    local = cli("summary", "--json", *files, "--jobs", "1")
    assert local.returncode == 0, local.stderr
    proc = cli(
        "summary",
        "--json",
        *files,
        "--ray",
        ray_cluster.address,
        env=ray_support.auth_env(ray_cluster.temp_dir),
        background=True,
    )
    killed = None
    deadline = time.monotonic() + 300
    while killed is None and proc.poll() is None and time.monotonic() < deadline:
        for pid in _reading_workers():
            os.kill(pid, signal.SIGKILL)
            killed = pid
            break
        time.sleep(0.01)
    out, err = proc.communicate(timeout=600)
    assert killed is not None, f"no worker was seen reading a trace; summary ended with {proc.returncode}: {err}"
    assert proc.returncode == 0, err
    assert (
        out == local.stdout and without_retries(err) == local.stderr == ""
    )  # every file read, the killed one by a retry
