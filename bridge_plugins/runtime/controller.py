"""ProfilingController: which rank profiles, and the windows it runs for the training loop::

    with ProfilingController.from_config(cfg) as controller:   # before the model is built
        for step in range(first_step, train_iters):
            with controller.step(step):
                ...one training iteration...

``step(i)`` is one comparison against the earliest step a window or the poller needs; else a no-op.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bridge_plugins.config.profiling import ProfilingConfig
from bridge_plugins.jobdir.on_demand import Request
from bridge_plugins.runtime.config_input import config_from
from bridge_plugins.runtime.on_demand import Acceptance, RequestPoller, log_accepted
from bridge_plugins.runtime.paths import resolve_output_dir
from bridge_plugins.runtime.ranks import detect_rank, detect_world_size
from bridge_plugins.runtime.signals import SignalGuard
from bridge_plugins.runtime.steps import NOOP
from bridge_plugins.runtime.window import NEVER, Window

log = logging.getLogger("bridge_plugins")


class ProfilingController:
    """Starts and stops every profiling backend for exactly the configured steps and ranks."""

    def __init__(
        self,
        config: ProfilingConfig | None,
        *,
        rank: int | None = None,
        world_size: int | None = None,
        handle_sigterm: bool = True,
    ):
        if config is not None:
            config.validate()  # fiddle and OmegaConf may have built it without __post_init__
        self.config = config
        self._rank_override, self._world_override = rank, world_size
        self.handle_sigterm = handle_sigterm
        self.rank: int | None = None
        self.world_size: int | None = None
        self.selected = False
        self.output_dir: Path | None = None
        self._next = NEVER  # step() takes the slow path only for steps >= this
        self._window: Window | None = None  # the configured window, on a selected rank
        self._windows: list[Window] = []  # windows a step may still reach, the configured one first
        self._finished: list[Window] = []  # windows no step reaches; exited (exports joined) at the end
        # re-entrant: the SIGTERM handler runs on the training thread, maybe inside its critical section
        self._lock = threading.RLock()
        self._poller: RequestPoller | None = None
        self._acceptance: Acceptance | None = None
        self._signals = SignalGuard(self._on_sigterm, "profiling")

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
        return [p for w in self._finished + self._windows for p in w.writer.paths]

    @property
    def captured_steps(self) -> range | None:
        """The steps captured by the configured window (so far), or None if it never opened."""
        return self._window.captured_steps if self._window is not None else None

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> ProfilingController:
        cfg = self.config
        if cfg is None or not cfg.enabled:
            return self
        rank = self.rank = self._rank_override if self._rank_override is not None else detect_rank()
        world = self.world_size = self._world_override if self._world_override is not None else detect_world_size()
        outside = [r for r in cfg.profile_ranks if r >= world]
        if outside and rank == 0:
            log.warning(
                "profile_ranks=%s lists rank(s) %s outside the world of %d rank(s) (0..%d): they will not profile",
                cfg.profile_ranks,
                outside,
                world,
                world - 1,
            )
        self.selected = cfg.profiles_rank(rank) and cfg.has_window
        try:
            output_dir = self.output_dir = resolve_output_dir(cfg)
        except ValueError as e:
            log.error("rank %d: profiling is off for this run: %s; training continues", rank, e)
            self.selected = False
            return self
        self._signals = SignalGuard(self._on_sigterm, f"rank {rank}")
        if cfg.on_demand:  # on every rank: a request may name any of them
            self._acceptance = Acceptance(cfg, rank, world, output_dir, cfg.record_memory_history and self.selected)
            self._poller = RequestPoller(cfg, rank, world, output_dir, self._lock, self._wake_up)
            self._poller.start()
        if self.selected:
            window = self._window = Window(cfg, rank, world, output_dir, self._signals).build()
            log.info(
                "rank %d: profiling steps %d-%d with %s; artifacts under %s",
                rank,
                cfg.profile_step_start,
                cfg.profile_step_end - 1,
                ", ".join(b.name for b in window.backends) or "nothing",
                output_dir,
            )
            self._windows.append(window.arm())
        if (self.selected or cfg.on_demand) and self.handle_sigterm:
            self._signals.install()
        self._settle(min((w.next for w in self._windows), default=NEVER))
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        why = f"{exc_type.__name__} raised" if exc_type else "the training loop ended"
        try:
            with self._signals.hold():  # a held Ctrl-C is raised when it ends
                self._shut_down(lambda w: w.exit(why))
        finally:
            self._signals.uninstall()
        return False

    def _on_sigterm(self) -> None:
        """SIGTERM (signals are held): every window writes what it captured; the guard then delivers it."""
        self._shut_down(Window.on_sigterm)

    def _shut_down(self, close: Callable[[Window], None]) -> None:
        """Stop polling; close every window, the configured one first, and join every export."""
        self._next = NEVER
        if self._poller is not None:
            self._poller.stop()
        self._finished += self._windows
        self._windows = []
        for w in sorted(self._finished, key=lambda w: w is not self._window):
            close(w)  # a finished window too: that joins its background export

    # ------------------------------------------------------------------ steps
    def step(self, step: int):
        """The context manager for training step ``step`` (0-based global iteration index)."""
        if step < self._next:
            return NOOP
        return self._step_slow(step)

    def _step_slow(self, step: int):
        if self._poller is not None:
            for request in self._poller.take(step):
                self._consider(request, step)
        scope, nxt, done = NOOP, NEVER, False
        for w in self._windows:
            if step >= w.next:
                s = w.step(step)
                if s is not NOOP:  # windows never overlap (on_demand.Acceptance): at most one is not the no-op
                    scope, nxt = s, -1  # an open window sees every step (a skip or a step back closes it)
            if w.state == "done":
                done = True
            elif w.next < nxt:
                nxt = w.next
        if done:
            self._finished += [w for w in self._windows if w.state == "done"]
            self._windows = [w for w in self._windows if w.state != "done"]
        self._settle(nxt)
        return scope

    def _settle(self, nxt: int) -> None:
        """``_next`` becomes ``nxt`` (the windows' earliest), or -1 while the poller waits for a step."""
        if self._poller is None:
            self._next = nxt
            return
        with self._lock:  # the poller wakes us under this lock: neither side loses the other's update
            self._next = -1 if self._poller.wants_step() else nxt

    def _wake_up(self) -> None:
        """The poller has something for the training thread (called with ``_lock`` held)."""
        self._next = -1

    def _consider(self, request: Request, step: int) -> None:
        """Arm a window for ``request`` if this rank accepts it; profiling never kills training."""
        assert self._acceptance is not None and self.output_dir is not None
        try:
            window_cfg = self._acceptance.window_config(request, step)
            if window_cfg is None:
                return
            rank, world = self._acceptance.rank, self._acceptance.world_size
            window = Window(window_cfg, rank, world, self.output_dir, self._signals, request.id).build().arm()
            self._windows.append(window)
            log_accepted(rank, request, window_cfg)
        except Exception as e:  # profiling must never kill training
            log.error(
                "rank %d: on-demand request %d failed (%s: %s); training continues",
                self.rank,
                request.id,
                type(e).__name__,
                e,
            )
