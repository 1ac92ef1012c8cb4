"""What a PyTorch trace says about itself, so readers (HTA, our summary) need not guess from names.

- ``distributedInfo`` (rank, world_size): torch adds it only when torch.distributed is
  initialized (then with the backend and process groups, and we leave it alone). A rank that
  profiles without a process group (plain srun tasks, a single process) gets ours, from the same
  rank detection the controller uses (RANK, then SLURM_PROCID).
- ``bridge_plugins``: the configured window, the steps captured, and the ProfilingConfig.

Both are top-level keys of the trace JSON (``profile.add_metadata_json``), which works only while
the profiler runs: distributedInfo is added after ``start()``, ours just before ``stop()``.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict

from bridge_plugins.runtime.backend import BackendContext


def _dist_initialized() -> bool:
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized()


def add_distributed_info(prof: Any, ctx: BackendContext) -> None:
    """Add ``distributedInfo`` unless torch adds its own (a process group exists)."""
    if not _dist_initialized():
        prof.add_metadata_json("distributedInfo", json.dumps({"rank": ctx.rank, "world_size": ctx.world_size}))


def window_metadata(ctx: BackendContext, first: int, last: int) -> Dict[str, Any]:
    cfg = ctx.cfg
    return {
        "window": [cfg.profile_step_start, cfg.profile_step_end - 1],
        "captured": [first, last],
        "rank": ctx.rank,
        "world_size": ctx.world_size,
        "config": dataclasses.asdict(cfg),
    }


def add_window_metadata(prof: Any, ctx: BackendContext, first: int, last: int) -> None:
    prof.add_metadata_json("bridge_plugins", json.dumps(window_metadata(ctx, first, last)))
