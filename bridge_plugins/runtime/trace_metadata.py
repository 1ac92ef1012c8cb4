"""What a PyTorch trace says about itself, so readers (HTA, our summary) need not guess from names.

``distributedInfo`` (rank, world size) where torch.distributed did not add it, and
``bridge_plugins`` (the window, the steps captured, the config): top-level keys of the trace JSON,
added while the profiler runs. Values never hold a backslash, which Kineto would turn into ``/``
and break the JSON: such strings are percent-encoded. Details: docs/formats.md.
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
