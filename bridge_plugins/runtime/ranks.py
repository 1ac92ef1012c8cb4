"""Which global rank this process is, and how many there are, without assuming a process group.

Order: torch.distributed when initialized, then RANK (torchrun), then SLURM_PROCID (plain srun
tasks), then 0; the world size likewise from WORLD_SIZE, then the srun step's task count.
Megatron Bridge calls ``torch.distributed.get_rank()`` where no process group may exist; this
never does.
"""

from __future__ import annotations

import os


def process_group():
    """``torch.distributed`` when a process group is initialized, else None."""
    import torch.distributed as dist

    return dist if dist.is_available() and dist.is_initialized() else None


def detect_rank() -> int:
    dist = process_group()
    if dist is not None:
        return dist.get_rank()
    for var in ("RANK", "SLURM_PROCID"):
        if os.environ.get(var, "").strip():
            return int(os.environ[var])
    return 0


def detect_world_size() -> int:
    dist = process_group()
    if dist is not None:
        return dist.get_world_size()
    for var in ("WORLD_SIZE", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"):
        if os.environ.get(var, "").strip():
            return int(os.environ[var])
    return 1
