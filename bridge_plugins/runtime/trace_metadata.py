"""What a PyTorch trace says about itself, so readers (HTA, our summary) need not guess from names.

- ``distributedInfo`` (rank, world_size): torch adds it only when torch.distributed is
  initialized (then with the backend and process groups, and we leave it alone). A rank that
  profiles without a process group (plain srun tasks, a single process) gets ours, from the same
  rank detection the controller uses (RANK, then SLURM_PROCID).
- ``bridge_plugins``: the configured window, the steps captured, and the ProfilingConfig.

Both are top-level keys of the trace JSON (``profile.add_metadata_json``), which works only while
the profiler runs: distributedInfo is added after ``start()``, ours just before ``stop()``.

Kineto writes a metadata value into the file as given, except that it turns every backslash
into ``/``: a JSON escape (``\"`` inside a path, ``\u00e9`` for non-ASCII) would come out as
broken JSON and take the whole trace with it. So our values hold no backslash: non-ASCII is kept
as UTF-8, and a string that would need an escape (a double quote, a backslash, a control
character) is percent-encoded, its config field named in ``percent_encoded``.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any
from urllib.parse import quote

from bridge_plugins.runtime.backend import BackendContext
from bridge_plugins.runtime.ranks import process_group


def add_distributed_info(prof: Any, ctx: BackendContext) -> None:
    """Add ``distributedInfo`` unless torch adds its own (a process group exists)."""
    if process_group() is None:
        prof.add_metadata_json("distributedInfo", json.dumps({"rank": ctx.rank, "world_size": ctx.world_size}))


def _needs_escape(text: str) -> bool:
    return any(c in '"\\' or ord(c) < 0x20 or c == "\x7f" for c in text)


def _kineto_safe_config(config: dict[str, Any]) -> tuple:
    """The config with every string that JSON would escape percent-encoded, and their field names."""
    encoded: list[str] = []
    safe = {}
    for name, value in config.items():
        if isinstance(value, str) and _needs_escape(value):
            value = quote(value, safe=" !#$&'()*+,-./:;<=>?@[]^_`{|}~")
            encoded.append(name)
        safe[name] = value
    return safe, encoded


def window_metadata(ctx: BackendContext, first: int, last: int) -> dict[str, Any]:
    cfg = ctx.cfg
    config, encoded = _kineto_safe_config(dataclasses.asdict(cfg))
    return {
        "window": [cfg.profile_step_start, cfg.profile_step_end - 1],
        "captured": [first, last],
        "rank": ctx.rank,
        "world_size": ctx.world_size,
        "config": config,
        "percent_encoded": encoded,
    }


def add_window_metadata(prof: Any, ctx: BackendContext, first: int, last: int) -> None:
    text = json.dumps(window_metadata(ctx, first, last), ensure_ascii=False)
    if "\\" in text:  # cannot happen with the encoding above; never risk the trace for its metadata
        return
    prof.add_metadata_json("bridge_plugins", text)
