"""Jobs across two Slurm nodes (scripts/slurm/up.sh --nodes 2: n1 and n2, each its own network
namespace, address and host name) through ``run.SlurmExecutor(nodes=2, ...)``.

What only several nodes show: torchrun's multi-node c10d rendezvous through NeMo Run's sbatch
script (its head-node address lookup), global ranks that differ from local ranks, SLURM_NODEID
in the nsys report names, and trace names that stay unique across nodes. Every job runs
``tests.slurm_job.pretrain_recording_placement`` (the recipe's pretrain plus a record of where
each process ran), so the names are checked against what each process really was.
"""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import nemo_run as run
import pytest

from bridge_plugins import NsysPlugin, PyTorchProfilerPlugin
from bridge_plugins.jobdir import names as artifact_names
from recipes.tiny_gpt import tiny_gpt_config
from tests.slurm_job import pretrain_recording_placement
from tests.slurm_support import (
    assert_placement,
    assert_window_traces,
    job_env,
    read_placements,
    require_nodes,
    run_on_slurm,
    slurm_executor,
)
from tests.support import stand_in_nsys

pytestmark = pytest.mark.slurm

START, END, STEPS = 3, 6, 8
SMALL = dict(train__train_iters=STEPS, model__hidden_size=32)


@pytest.fixture(autouse=True)
def home(nemo_home):
    """Every test gets an isolated NeMo Run home (tests/conftest.py)."""
    return nemo_home


@pytest.fixture(scope="module")
def two_nodes(slurm_cluster):
    """The cluster, which must have two nodes: their names in order (SLURM_NODEID 0, 1)."""
    return {**slurm_cluster, "nodes": require_nodes(2)[:2]}


def placement_task(record_dir: Path) -> run.Partial:
    record_dir.mkdir()
    return run.Partial(pretrain_recording_placement, config=tiny_gpt_config(**SMALL), record_dir=str(record_dir))


def assert_traces_written_by_their_rank(records, output_dir: Path, ranks) -> None:
    """Each selected rank's trace holds exactly the window, and the process that wrote it is that rank."""
    assert_window_traces(output_dir, ranks, START, END)
    # nothing else in the directory: no second file per rank, no temporary left behind
    written = sorted(p.name for p in (Path(output_dir) / artifact_names.TORCH_TRACE_DIR).iterdir())
    expected = [
        artifact_names.torch_trace_stem(r, START, END - 1, environ={}) + artifact_names.TORCH_TRACE_SUFFIX
        for r in ranks
    ]
    assert written == sorted(expected), written
    for r in records:
        traces = [Path(a) for a in r["artifacts"] if a.endswith(artifact_names.TORCH_TRACE_SUFFIX)]
        if int(r["rank"]) in ranks:
            (trace,) = traces
            assert artifact_names.parse(trace).rank == int(r["rank"]), (trace, r)
            assert trace.parent == Path(output_dir) / artifact_names.TORCH_TRACE_DIR, trace
        else:
            assert traces == [], r


def test_torchrun_partial_across_two_nodes(two_nodes, tmp_path):
    """One torchrun per node, one c10d rendezvous at the head node's address found by the sbatch script."""
    records_dir = tmp_path / "placement"
    executor = slurm_executor(two_nodes, tmp_path, nodes=2, ntasks_per_node=1, launcher=run.Torchrun())
    ranks = [0, 1]
    ran = run_on_slurm(
        tmp_path,
        placement_task(records_dir),
        executor,
        [PyTorchProfilerPlugin(profile_step_start=START, profile_step_end=END, profile_ranks=ranks)],
    )
    ran.assert_succeeded()
    acct = ran.accounting()
    assert (acct["NNodes"], acct["NodeList"]) == ("2", "n[1-2]"), acct
    text = ran.sbatch_text()
    # NeMo Run's multi-node torchrun: the head node's address, looked up on that node, is the endpoint.
    assert "hostname --ip-address" in text and "--nnodes 2" in text.replace("=", " "), text
    assert re.search(r"--rdzv-endpoint[= ]\$head_node_ip", text), text
    # ... and both torchruns used the head node's own address (its /etc/hosts entry), not a loopback one.
    head_ip = socket.gethostbyname(two_nodes["nodes"][0])
    endpoints = set(re.findall(r"rdzv_endpoint\s*:\s*(\S+)", ran.full_logs))
    assert endpoints == {f"{head_ip}:29500"}, endpoints
    records = read_placements(records_dir)
    assert_placement(records, two_nodes["nodes"], ntasks_per_node=1, world_size=2)
    # Both ranks joined the process group at the head node (torchrun's agent there hosts the store).
    assert {r["env"]["MASTER_ADDR"] for r in records} == {two_nodes["nodes"][0]}, records
    assert all(r["env"]["SLURM_PROCID"] == r["env"]["GROUP_RANK"] for r in records), records
    assert "training 8 steps on 2 rank(s)" in ran.full_logs, ran.logs
    assert_traces_written_by_their_rank(records, ran.job_dir, ranks)


@pytest.mark.parametrize("per_node", [1, 2])
def test_srun_tasks_across_two_nodes(two_nodes, tmp_path, per_node):
    """Plain srun tasks (no torchrun): SLURM_PROCID is the global rank, SLURM_STEP_NUM_TASKS the world."""
    records_dir = tmp_path / "placement"
    world = 2 * per_node
    ranks = list(range(1, world))  # rank 0 unselected; with 2 per node, rank 2 is node 1's local rank 0
    executor = slurm_executor(two_nodes, tmp_path, nodes=2, ntasks_per_node=per_node)
    ran = run_on_slurm(
        tmp_path,
        placement_task(records_dir),
        executor,
        [PyTorchProfilerPlugin(profile_step_start=START, profile_step_end=END, profile_ranks=ranks)],
    )
    ran.assert_succeeded()
    assert ran.accounting()["NNodes"] == "2"
    records = read_placements(records_dir)
    assert_placement(records, two_nodes["nodes"], ntasks_per_node=per_node, world_size=world)
    assert all(r["env"]["SLURM_PROCID"] == r["rank"] for r in records), records
    assert f"training 8 steps on {world} rank(s)" in ran.full_logs, ran.logs
    assert_traces_written_by_their_rank(records, ran.job_dir, ranks)


def test_nsys_stand_in_across_two_nodes(two_nodes, tmp_path):
    """One nsys per Slurm task; each report's name carries its task's job id, node id and rank.
    Two tasks per node, so node id and rank differ (a swapped name would not pass)."""
    bin_dir, nsys_log = stand_in_nsys(tmp_path)
    records_dir = tmp_path / "placement"
    executor = slurm_executor(
        two_nodes, tmp_path, nodes=2, ntasks_per_node=2, env=job_env(path_prefix=bin_dir, FAKE_NSYS_LOG=str(nsys_log))
    )
    plugin = NsysPlugin(profile_step_start=START, profile_step_end=END, profile_ranks=[1, 2])
    ran = run_on_slurm(tmp_path, placement_task(records_dir), executor, [plugin])
    ran.assert_succeeded()
    records = read_placements(records_dir)
    assert_placement(records, two_nodes["nodes"], ntasks_per_node=2, world_size=4)
    # The stand-in records each call in nsys.<its pid>.json and execs the job in place (same pid),
    # so the pid links a report to the placement record of the process it profiled.
    by_pid = {r["pid"]: r for r in records}
    reports = []
    for path in sorted(nsys_log.glob("nsys.*.json")):
        invocation = json.loads(path.read_text())
        report = Path(invocation["output"] + ".nsys-rep")
        assert report.is_file(), invocation
        r = by_pid[int(path.name.split(".")[1])]
        name = artifact_names.parse(report)
        assert (name.kind, name.job_id, name.node, name.rank) == (
            "nsys_report",
            ran.slurm_id,
            int(r["env"]["SLURM_NODEID"]),
            int(r["rank"]),
        ), (report, r)
        assert report.parent == ran.job_dir / artifact_names.NSYS_DIR, report
        reports.append(report)
    assert sorted(reports) == sorted((ran.job_dir / artifact_names.NSYS_DIR).glob("*.nsys-rep"))
    names = [artifact_names.parse(p) for p in reports]
    assert {(n.node, n.rank) for n in names} == {(0, 0), (0, 1), (1, 2), (1, 3)}, reports
    assert "training 8 steps on 4 rank(s)" in ran.full_logs, ran.logs
