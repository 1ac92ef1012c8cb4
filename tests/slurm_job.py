"""Job side of the multi-node Slurm tests: the recipe's ``pretrain``, plus a record of where it ran.

``run.Partial(pretrain_recording_placement, config=..., record_dir=...)`` trains exactly like
``recipes.train.pretrain`` and then writes, per process, ``placement.<host>.<pid>.json`` with its
host name, the Slurm and torchrun variables it saw and the artifacts it wrote. The tests compare
that record with the artifacts' names: a trace named ``rank3`` must come from the process whose
global rank is 3, on the node Slurm says. ``on_demand_job_recording_placement`` does the same for
the on-demand test job (tests/helpers/on_demand_job.py). Imports no test framework: it runs inside the job.
"""

from __future__ import annotations

import json
import os
import socket

from recipes.train import pretrain
from tests.helpers.on_demand_job import train

PLACEMENT_VARS = (
    "SLURM_NODEID",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURM_STEP_NUM_TASKS",
    "SLURM_JOB_ID",
    "SLURMD_NODENAME",
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "GROUP_RANK",
    "MASTER_ADDR",
)


def pretrain_recording_placement(config, record_dir: str) -> dict:
    result = pretrain(config)
    record_placement(record_dir, result["artifacts"])
    return result


def on_demand_job_recording_placement(output_dir: str, steps: int, sleep_s: float, record_dir: str) -> list:
    """tests/helpers/on_demand_job.py's training (on-demand profiling on, a sleep per step)."""
    artifacts = train(output_dir, steps, sleep_s)
    record_placement(record_dir, artifacts)
    return artifacts


def record_placement(record_dir: str, artifacts) -> None:
    """Write this process's placement record. Called after training: for plain srun tasks
    RANK/WORLD_SIZE are set by recipes.train from SLURM_* when the process group is built."""
    record = {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "rank": os.environ.get("RANK", "0"),
        "env": {k: os.environ.get(k) for k in PLACEMENT_VARS},
        "artifacts": list(artifacts),
    }
    path = os.path.join(record_dir, f"placement.{record['host']}.{record['pid']}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(record, f)
    os.replace(path + ".tmp", path)
