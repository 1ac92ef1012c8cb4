"""The interface every profiling backend implements, and the context each one is built with.

Call order: ``on_enter`` (controller entry), then per window ``window_begin``, ``step_begin`` /
``step_end`` per step, ``window_end``; ``on_exit`` (controller exit or SIGTERM) leaves nothing
pending. ``abort`` follows any method that raised. Every method is a no-op here. :func:`call_each`
is the failure isolation: a backend that raises is logged, aborted and dropped; training goes on.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bridge_plugins.config.profiling import ProfilingConfig
from bridge_plugins.runtime.artifacts import ArtifactWriter

log = logging.getLogger("bridge_plugins")


@dataclass(frozen=True)
class BackendContext:
    """What a backend is built with: the config, who this rank is, where files go, the writer."""

    cfg: ProfilingConfig
    rank: int
    world_size: int
    output_dir: Path
    writer: ArtifactWriter
    trigger: int | None = None
    """The on-demand request this window answers (``bridge-plugins trigger``); it goes into file names."""


class Backend:
    """Base class of the profiling backends (see the module docstring for the call order)."""

    name = "backend"
    """How logs name this backend."""

    def __init__(self, ctx: BackendContext) -> None:
        self.ctx, self.cfg, self.rank = ctx, ctx.cfg, ctx.rank

    def on_enter(self) -> None:
        """Controller entry, before the model is built."""

    def window_begin(self, step: int) -> None:
        """The window opens at global step ``step`` (before its ``step_begin``)."""

    def step_begin(self, step: int, first: bool) -> None:
        """Step ``step`` of the window starts; ``first`` for the window's first step."""

    def step_end(self, step: int) -> None:
        """Step ``step`` of the window ended normally."""

    def window_end(self, first: int, last: int, sync: bool) -> None:
        """The window closed after capturing ``first..last``; write now if ``sync`` (SIGTERM)."""

    def on_exit(self) -> None:
        """Controller exit (or SIGTERM): finish every pending write."""

    def abort(self) -> None:
        """A method raised: stop anything still running (best effort; errors are ignored)."""


def call_each(
    backends: list[Backend], call: Callable[[Backend], None], what: str, rank: int | None, reverse: bool = False
) -> None:
    """Call ``call`` on every backend; one that raises is logged, aborted and removed from ``backends``.

    Failure isolation in one place: profiling must never kill training, and a backend that failed once
    is not called again (its state is unknown).
    """
    for b in list(reversed(backends)) if reverse else list(backends):
        try:
            call(b)
        except Exception as e:  # profiling must never kill training
            log.error(
                "rank %s: %s failed in %s (%s: %s); it is switched off and training continues",
                rank,
                b.name,
                what,
                type(e).__name__,
                e,
            )
            backends.remove(b)
            with contextlib.suppress(Exception):  # best effort: leave no profiler running, no recording on
                b.abort()
