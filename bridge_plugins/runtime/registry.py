"""Which backends exist: one line each, the switch that turns it on and where its class lives.

Adding a backend is one file (a ``Backend`` subclass) and one line here. Classes are named by
import path so that torch is imported only on a rank that profiles. Order matters: windows open
in this order and close in reverse (LIFO), so the execution-trace observer is running before the
PyTorch profiler opens its first ``ProfilerStep`` and still running when it closes the last, and
the memory snapshot is taken after the profilers have stopped.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from typing import NamedTuple

from bridge_plugins.config.profiling import ProfilingConfig
from bridge_plugins.runtime.backend import Backend, BackendContext

log = logging.getLogger("bridge_plugins")


class Entry(NamedTuple):
    enabled: Callable[[ProfilingConfig], bool]
    factory: str  # "module:Class", a Backend subclass


BACKENDS = (
    Entry(lambda c: c.record_memory_history, "bridge_plugins.runtime.memory:MemoryHistoryBackend"),
    Entry(lambda c: c.use_nsys_profiler, "bridge_plugins.runtime.nsys:NsysBackend"),
    Entry(
        lambda c: c.use_pytorch_profiler and c.pytorch_profiler_collect_chakra,
        "bridge_plugins.runtime.chakra:ChakraBackend",
    ),
    Entry(lambda c: c.use_pytorch_profiler, "bridge_plugins.runtime.torch_profiler:TorchProfilerBackend"),
)


def _load(entry: Entry) -> type[Backend]:
    module, cls = entry.factory.split(":")
    return getattr(importlib.import_module(module), cls)


def build_backends(ctx: BackendContext) -> list[Backend]:
    """Build every enabled backend; one whose construction fails (a path it cannot use) is off
    for this run with an error line, and the others still run."""
    if ctx.cfg.pytorch_profiler_collect_chakra and not ctx.cfg.use_pytorch_profiler:
        log.warning(
            "rank %d: pytorch_profiler_collect_chakra=True needs use_pytorch_profiler=True (its steps are "
            "the PyTorch profiler's): no Chakra execution trace is written",
            ctx.rank,
        )
    backends = []
    for entry in BACKENDS:
        if not entry.enabled(ctx.cfg):
            continue
        try:  # a broken install (its module or class missing) must not stop training either
            factory = _load(entry)
        except Exception as e:
            name = entry.factory.split(":")[1]
            log.error(
                "rank %d: %s is off for this run (%s: %s); training continues", ctx.rank, name, type(e).__name__, e
            )
            continue
        try:
            backends.append(factory(ctx))
        except Exception as e:
            log.error("rank %d: %s is off for this run (%s); training continues", ctx.rank, factory.name, e)
    return backends
