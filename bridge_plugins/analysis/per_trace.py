"""One trace's outcome (:class:`Done`) and the per-trace unit as every backend runs it, local or on
Ray: shared by parallel.py and ray_map.py, which import it and not each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bridge_plugins.config.errors import BridgePluginsError

RAY_TASK_RETRIES = 3
"""How often Ray reruns a trace whose worker process died (Ray's ``max_retries``)."""
WORKER_DIED = "the process reading it died ({why}); retried {n} times"
PerTrace = Callable[[Path], object]
"""The per-trace unit that ``Workers.map`` runs on each path."""


class ClusterUnavailable(BridgePluginsError):
    """The Ray cluster asked for could not be reached: ``str(e)`` says which address and why."""


@dataclass(frozen=True)
class Done:
    """One trace's outcome: ``value`` (what the per-trace function returned) or ``error`` (one line)."""

    path: Path
    value: object = None
    error: str | None = None
    node: str | None = None  # where it was read (Ray: the node's address)


def call(fn: Callable[[Path], object], path: Path, catch: type[Exception]) -> Done:
    """The per-trace unit as every backend runs it: the value, or the caught error as one line."""
    try:
        return Done(path, value=fn(path))
    except catch as e:
        return Done(path, error=str(e))
