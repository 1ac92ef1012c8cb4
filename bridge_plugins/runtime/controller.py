"""ProfilingController: which rank profiles, which steps, and the lifecycle of every backend.

Usage in a training loop::

    controller = ProfilingController.from_config(cfg)
    with controller:                       # before the model is built
        for step in range(first_step, train_iters):
            with controller.step(step):
                ...one training iteration...
    controller.artifacts                   # paths written

Design:
- ``step(i)`` outside the window, or on a rank that is not selected, is one comparison and
  returns a shared no-op context manager (well under 1 us; see benchmarks/).
- The window is ``profile_step_start <= i < profile_step_end`` of the global step ``i``. It opens
  at the first step seen inside it (so a run resumed mid-window captures the rest) and closes
  after step ``end-1``, or earlier: on an exception or SIGTERM inside a step, when the loop skips
  past the end or goes back to an earlier step, or when the controller exits first. Every early
  close writes what was captured and warns with the steps actually captured.
- Backends (``backend.Backend``) come from one registry (``registry.BACKENDS``). One that fails
  (a bad path, an unwritable directory, a full disk) is logged as an error and dropped; the
  training job never dies of profiling.
- Signals (``signals.SignalGuard``): SIGTERM writes what was captured, then takes its course;
  no SIGTERM or Ctrl-C interrupts a write or the opening of a window (they are held until it is done).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from bridge_plugins.config.profiling import ProfilingConfig
from bridge_plugins.runtime.artifacts import ArtifactWriter
from bridge_plugins.runtime.backend import Backend, BackendContext, call_each
from bridge_plugins.runtime.config_input import config_from
from bridge_plugins.runtime.paths import resolve_output_dir
from bridge_plugins.runtime.ranks import detect_rank, detect_world_size
from bridge_plugins.runtime.registry import build_backends
from bridge_plugins.runtime.signals import SignalGuard
from bridge_plugins.runtime.steps import NOOP as _NOOP
from bridge_plugins.runtime.steps import StepScope
from bridge_plugins.runtime.window_messages import (
    log_window_closed,
    warn_never_reached,
    warn_past_unopened_window,
    warn_started_inside,
)

log = logging.getLogger("bridge_plugins")

_NEVER = 1 << 62  # an int: comparing int < float costs more in the fast path


class ProfilingController:
    """Starts and stops every profiling backend for exactly the configured steps and ranks."""

    def __init__(
        self,
        config: ProfilingConfig | None,
        *,
        rank: int | None = None,
        world_size: int | None = None,
        handle_sigterm: bool = True,
        signals: SignalGuard | None = None,
        trigger: int | None = None,
    ):
        if config is not None:
            config.validate()  # fiddle and OmegaConf may have built it without __post_init__
        self.config = config
        self._rank_override, self._world_override = rank, world_size
        # ``signals``: an owner's guard (the on-demand windows'), which holds this window's close too;
        # its owner installs it, so this controller neither installs nor uninstalls it
        self.handle_sigterm = handle_sigterm and signals is None
        self._given_signals = signals
        self.trigger = trigger  # the on-demand request this controller's window answers (in its file names)
        self._on_demand: Any = None  # runtime.on_demand.OnDemandWindows when config.on_demand
        self.rank: int | None = None
        self.world_size: int | None = None
        self.selected = False
        self.output_dir = None
        self._writer = ArtifactWriter()
        self._backends: list[Backend] = []
        self._next = _NEVER  # step() takes the slow path only for steps >= this
        self._state = "idle"  # idle -> armed -> active -> closing -> done
        self._first: int | None = None
        self._last_seen: int | None = None
        self._scope = StepScope(self)
        self._signals = signals or SignalGuard(self._on_sigterm, "profiling")

    @classmethod
    def from_config(cls, cfg: Any, **kwargs: Any) -> ProfilingController:
        """Build from a config container (``.profiling``, optional ``.ft``), a ProfilingConfig, an
        object or mapping with its field names, or None (an inert controller); see config_input.

        With fault tolerance on (``cfg.ft.enable_ft_package``) nsys is switched off with a warning.
        """
        return cls(config_from(cfg), **kwargs)

    @property
    def artifacts(self) -> list:
        """Paths of every file written so far (traces, snapshots), on-demand windows' included."""
        return list(self._writer.paths) + (self._on_demand.artifacts if self._on_demand is not None else [])

    @property
    def captured_steps(self) -> range | None:
        """The steps captured by the (current or last) window, or None if it never opened."""
        if self._first is None:
            return None
        return range(self._first, self._last_seen + 1)

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> ProfilingController:
        cfg = self.config
        if cfg is None or not cfg.enabled:
            return self
        self.rank = self._rank_override if self._rank_override is not None else detect_rank()
        world = self.world_size = self._world_override if self._world_override is not None else detect_world_size()
        outside = [r for r in cfg.profile_ranks if r >= world]
        if outside and self.rank == 0:
            log.warning(
                "profile_ranks=%s lists rank(s) %s outside the world of %d rank(s) (0..%d): they will not profile",
                cfg.profile_ranks,
                outside,
                world,
                world - 1,
            )
        self.selected = cfg.profiles_rank(self.rank)
        try:
            self.output_dir = self._writer.root = resolve_output_dir(cfg)
        except ValueError as e:
            log.error("rank %d: profiling is off for this run: %s; training continues", self.rank, e)
            self.selected = False
            return self
        if cfg.on_demand:  # on every rank: a request may name any of them; step() becomes its dispatcher
            from bridge_plugins.runtime.on_demand import OnDemandWindows

            self._on_demand = OnDemandWindows(self, world).start()
            self.step = self._on_demand.step
        if not self.selected or not cfg.has_window:
            self.selected = False
            return self  # an unselected rank (or on_demand alone) does no profiling work now
        self._signals = self._given_signals or SignalGuard(self._on_sigterm, f"rank {self.rank}")
        self._backends = build_backends(
            BackendContext(cfg, self.rank, world, self.output_dir, self._writer, self.trigger)
        )
        log.info(
            "rank %d: profiling steps %d-%d with %s; artifacts under %s",
            self.rank,
            cfg.profile_step_start,
            cfg.profile_step_end - 1,
            ", ".join(b.name for b in self._backends) or "nothing",
            self.output_dir,
        )
        self._each(lambda b: b.on_enter(), "on_enter")
        self._state, self._next = "armed", cfg.profile_step_start
        if self.handle_sigterm:
            self._signals.install()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        why = f"{exc_type.__name__} raised" if exc_type else "the training loop ended"
        try:
            with self._signals.hold():  # a held Ctrl-C is raised when it ends
                if self._state == "active":
                    self._close_window(f"{why} after step {self._last_seen}")
                elif self._state == "armed":
                    warn_never_reached(self.rank, self.config, why)
                self._finish()  # joins background exports: nothing is lost when the job ends
        finally:
            if self.handle_sigterm:
                self._signals.uninstall()
            if self._on_demand is not None:
                self.__dict__.pop("step", None)
                self._on_demand.close(exc_type)
        return False

    def _finish(self) -> None:
        self._state, self._next = "done", _NEVER
        self._each(lambda b: b.on_exit(), "on_exit")

    # ------------------------------------------------------------------ steps
    def step(self, step: int):
        """The context manager for training step ``step`` (0-based global iteration index)."""
        if step < self._next:
            return _NOOP
        return self._step_slow(step)

    def _step_slow(self, step: int):
        cfg = self.config
        end = cfg.profile_step_end
        if self._state == "armed":
            if step >= end:
                warn_past_unopened_window(self.rank, step, cfg)
                with self._signals.hold():
                    self._finish()
                return _NOOP
            if step > cfg.profile_step_start:
                warn_started_inside(self.rank, step, cfg)
        elif self._state == "active" and (step >= end or step <= self._last_seen):
            how = "skipping past the window end" if step >= end else "going back (a file's steps must match its name)"
            self._close_window(f"step {step} came after step {self._last_seen}, {how}")
            return _NOOP
        self._scope.step = step
        return self._scope

    def _enter_step(self, step: int) -> None:
        first = self._state == "armed"
        if first:
            self._state, self._next = "active", -1
            self._first = self._last_seen = step
            # held like a close: a SIGTERM handled mid-opening would close before a backend started
            with self._signals.hold():
                self._each(lambda b: b.window_begin(step), "window_begin")
            if self._state != "active":  # the held SIGTERM closed the window it opened
                return
        self._last_seen = step
        self._each(lambda b: b.step_begin(step, first), "step_begin")

    def _exit_step(self, step: int, exc_type) -> None:
        if self._state != "active":  # closed from inside the step (SIGTERM handler)
            return
        self._each(lambda b: b.step_end(step), "step_end", reverse=True)
        if exc_type is not None:
            self._close_window(f"{exc_type.__name__} raised in step {step}")
        elif step >= self.config.profile_step_end - 1:
            self._close_window(None)

    def _close_window(self, reason: str | None, sync: bool = False) -> None:
        """Stop every backend and write what the window captured (signals held meanwhile)."""
        with self._signals.hold():
            self._state, self._next = "closing", _NEVER
            first, last = self._first, self._last_seen  # a step interrupted by SIGTERM counts: its events are in
            try:
                self._each(lambda b: b.window_end(first, last, sync), "window_end", reverse=True)
            finally:
                self._state = "done"
            log_window_closed(self.rank, self.config, reason, first, last)

    def _on_sigterm(self) -> None:
        """SIGTERM (signals are held): write what was captured; the guard then delivers it."""
        if self._state == "active":
            self._close_window(f"SIGTERM received during step {self._last_seen}", sync=True)
        self._finish()

    # ------------------------------------------------------------------ failure isolation
    def _each(self, call: Callable[[Backend], None], what: str, reverse: bool = False) -> None:
        call_each(self._backends, call, what, self.rank, reverse)
