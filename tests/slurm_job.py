"""Job side of the multi-node Slurm tests: the recipe's ``pretrain``, plus a record of where it ran.

``run.Partial(pretrain_recording_placement, config=..., record_dir=...)`` trains exactly like
``recipes.train.pretrain`` and then writes, per process, ``placement.<host>.<pid>.json`` with its
host name, the Slurm and torchrun variables it saw and the artifacts it wrote. The tests compare
that record with the artifacts' names: a trace named ``rank3`` must come from the process whose
global rank is 3, on the node Slurm says. Imports no test framework: it runs inside the job.
"""

from __future__ import annotations

import json
import os
import socket

from recipes.train import pretrain

PLACEMENT_VARS = (
    "SLURM_NODEID", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_STEP_NUM_TASKS", "SLURM_JOB_ID", "SLURMD_NODENAME",
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR",
)


def pretrain_recording_placement(config, record_dir: str) -> dict:
    result = pretrain(config)
    # After pretrain: for plain srun tasks RANK/WORLD_SIZE are set by recipes.train from SLURM_*.
    record = {"host": socket.gethostname(), "pid": os.getpid(), "rank": os.environ.get("RANK", "0"),
              "env": {k: os.environ.get(k) for k in PLACEMENT_VARS}, "artifacts": result["artifacts"]}
    path = os.path.join(record_dir, f"placement.{record['host']}.{record['pid']}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(record, f)
    os.replace(path + ".tmp", path)
    return result
