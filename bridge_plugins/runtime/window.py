"""One profiling window: which steps it captures and the lifecycle of its backends.

A window is ``profile_step_start <= i < profile_step_end`` of the global step ``i``. It opens at
the first step seen inside it (a run resumed mid-window captures the rest) and closes after step
``end-1``, or earlier: on an exception or SIGTERM inside a step, when the loop skips past the end
or goes back, or when the controller exits first. Every early close writes what was captured and
warns with the steps actually captured. The controller runs the configured window and the
on-demand ones with this one state machine: idle -> armed -> active -> closing -> done.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bridge_plugins.config.profiling import ProfilingConfig
from bridge_plugins.runtime.artifacts import ArtifactWriter
from bridge_plugins.runtime.backend import Backend, BackendContext, call_each
from bridge_plugins.runtime.registry import build_backends
from bridge_plugins.runtime.signals import SignalGuard
from bridge_plugins.runtime.steps import NOOP, StepScope
from bridge_plugins.runtime.window_messages import (
    log_window_closed,
    warn_never_reached,
    warn_past_unopened_window,
    warn_started_inside,
)

NEVER = 1 << 62
"""``next`` of a window that no step can reach (an int: comparing int < float costs more)."""


class Window:
    """The backends of one window, started and stopped for exactly its steps on this rank."""

    def __init__(
        self,
        cfg: ProfilingConfig,
        rank: int,
        world_size: int,
        output_dir: Path,
        signals: SignalGuard,
        trigger: int | None = None,
    ) -> None:
        self.config, self.rank = cfg, rank
        self.trigger = trigger  # the on-demand request this window answers (in its file names)
        self.writer = ArtifactWriter()
        self.writer.root = output_dir
        self.backends: list[Backend] = []
        self.next = NEVER  # the controller calls step() only for steps >= this
        self.state = "idle"
        self.first: int | None = None
        self.last_seen: int | None = None
        self._world_size, self._output_dir = world_size, output_dir
        self._signals = signals
        self._scope = StepScope(self)

    @property
    def captured_steps(self) -> range | None:
        """The steps captured so far, or None if the window never opened."""
        if self.first is None or self.last_seen is None:
            return None
        return range(self.first, self.last_seen + 1)

    # ------------------------------------------------------------------ lifecycle
    def build(self) -> Window:
        """Build the backends from the registry (a backend that cannot be built is logged and left out)."""
        ctx = BackendContext(self.config, self.rank, self._world_size, self._output_dir, self.writer, self.trigger)
        self.backends = build_backends(ctx)
        return self

    def arm(self) -> Window:
        """``on_enter`` (before the model is built), then wait for the window's first step."""
        self._each(lambda b: b.on_enter(), "on_enter")
        self.state, self.next = "armed", self.config.profile_step_start
        return self

    def exit(self, why: str) -> None:
        """Controller exit: close the window if it is open (``why`` says what ended it), join writes."""
        if self.state == "active":
            self.close(f"{why} after step {self.last_seen}")
        elif self.state == "armed":
            warn_never_reached(self.rank, self.config, why)
        self.finish()

    def on_sigterm(self) -> None:
        """SIGTERM (signals are held): write what was captured, synchronously, and join."""
        if self.state == "active":
            self.close(f"SIGTERM received during step {self.last_seen}", sync=True)
        self.finish()

    def finish(self) -> None:
        """No step reaches this window any more; every backend finishes its pending writes."""
        self.state, self.next = "done", NEVER
        self._each(lambda b: b.on_exit(), "on_exit")

    # ------------------------------------------------------------------ steps
    def step(self, step: int):
        """The context manager for ``step`` (called only for ``step >= next``)."""
        cfg = self.config
        end = cfg.profile_step_end
        if self.state == "armed":
            if step >= end:
                warn_past_unopened_window(self.rank, step, cfg)
                with self._signals.hold():
                    self.finish()
                return NOOP
            if step > cfg.profile_step_start:
                warn_started_inside(self.rank, step, cfg)
        elif self.state == "active" and self.last_seen is not None and (step >= end or step <= self.last_seen):
            how = "skipping past the window end" if step >= end else "going back (a file's steps must match its name)"
            self.close(f"step {step} came after step {self.last_seen}, {how}")
            return NOOP
        elif self.state != "active":
            return NOOP
        self._scope.step = step
        return self._scope

    def _enter_step(self, step: int) -> None:
        first = self.state == "armed"
        if first:
            self.state, self.next = "active", -1
            self.first = self.last_seen = step
            # held like a close: a SIGTERM handled mid-opening would close before a backend started
            with self._signals.hold():
                self._each(lambda b: b.window_begin(step), "window_begin")
            if self.state != "active":  # the held SIGTERM closed the window it opened
                return
        self.last_seen = step
        self._each(lambda b: b.step_begin(step, first), "step_begin")

    def _exit_step(self, step: int, exc_type: type | None) -> None:
        if self.state != "active":  # closed from inside the step (SIGTERM handler)
            return
        self._each(lambda b: b.step_end(step), "step_end", reverse=True)
        if exc_type is not None:
            self.close(f"{exc_type.__name__} raised in step {step}")
        elif step >= self.config.profile_step_end - 1:
            self.close(None)

    def close(self, reason: str | None, sync: bool = False) -> None:
        """Stop every backend and write what the window captured (signals held meanwhile)."""
        with self._signals.hold():
            self.state, self.next = "closing", NEVER
            first, last = self.first, self.last_seen  # a step interrupted by SIGTERM counts: its events are in
            assert first is not None and last is not None  # only an open window closes
            try:
                self._each(lambda b: b.window_end(first, last, sync), "window_end", reverse=True)
            finally:
                self.state = "done"
            log_window_closed(self.rank, self.config, reason, first, last)

    def _each(self, call: Callable[[Backend], None], what: str, reverse: bool = False) -> None:
        call_each(self.backends, call, what, self.rank, reverse)
