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
  past the end, or when the controller exits first. Every early close writes what was captured
  and warns with the steps actually captured.
- A backend that fails (unwritable directory, full disk) is logged as an error and dropped; the
  training job never dies of profiling.
"""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path
from typing import Any, List, Optional

from bridge_plugins.config import DEFAULT_OUTPUT_DIR, ProfilingConfig
from bridge_plugins.runtime.artifacts import ArtifactWriter
from bridge_plugins.runtime.ranks import detect_rank, detect_world_size

log = logging.getLogger("bridge_plugins")

_NEVER = 1 << 62  # an int: comparing int < float costs more in the fast path


class _NoOp:
    """The context manager returned for every step that is not profiled."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type, exc, tb) -> bool:
        return False


_NOOP = _NoOp()


class _StepScope:
    """The context manager for a step inside the window (one per controller, reused)."""

    __slots__ = ("ctl", "step")

    def __init__(self, ctl: "ProfilingController"):
        self.ctl, self.step = ctl, -1

    def __enter__(self) -> None:
        self.ctl._enter_step(self.step)

    def __exit__(self, exc_type, exc, tb) -> bool:
        self.ctl._exit_step(self.step, exc_type)
        return False


def _profiling_section(cfg: Any) -> Optional[ProfilingConfig]:
    """Accept our ProfilingConfig, any object with its field names (Megatron Bridge's), or None."""
    if cfg is None or isinstance(cfg, ProfilingConfig):
        return cfg
    from dataclasses import fields

    values = {f.name: getattr(cfg, f.name) for f in fields(ProfilingConfig) if hasattr(cfg, f.name)}
    return ProfilingConfig(**values)


class ProfilingController:
    """Starts and stops every profiling backend for exactly the configured steps and ranks."""

    def __init__(
        self,
        config: Optional[ProfilingConfig],
        *,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        handle_sigterm: bool = True,
        trigger: Optional[int] = None,
    ):
        if config is not None:
            config.validate()  # fiddle and OmegaConf may have built it without __post_init__
        self.config = config
        self._rank_override, self._world_override = rank, world_size
        self.handle_sigterm = handle_sigterm
        self.trigger = trigger  # the on-demand request this controller's window answers (in its file names)
        self._on_demand: Any = None  # runtime.on_demand.OnDemandWindows when config.on_demand
        self.rank: Optional[int] = None
        self.selected = False
        self.output_dir: Optional[Path] = None
        self._writer = ArtifactWriter()
        self._backends: List[Any] = []
        self._next = _NEVER  # step() takes the slow path only for steps >= this
        self._state = "idle"  # idle -> armed -> active -> done
        self._first: Optional[int] = None
        self._last: Optional[int] = None
        self._last_seen: Optional[int] = None
        self._scope = _StepScope(self)
        self._prev_sigterm: Any = signal.SIG_DFL
        self._sigterm_installed = False
        self._sigterm_pending: Optional[tuple] = None

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_config(cls, cfg: Any, **kwargs: Any) -> "ProfilingController":
        """Build from a ConfigContainer-like object (``.profiling``, optional ``.ft``), a
        ProfilingConfig, or None (an inert controller).

        With fault tolerance on (``cfg.ft.enable_ft_package``) nsys is switched off with a
        warning: ft_launcher and an nsys capture range conflict.
        """
        if cfg is None or isinstance(cfg, ProfilingConfig):
            return cls(cfg, **kwargs)
        prof = _profiling_section(getattr(cfg, "profiling", None))
        ft = getattr(cfg, "ft", None)
        if prof is not None and prof.use_nsys_profiler and ft is not None and getattr(ft, "enable_ft_package", False):
            log.warning(
                "fault tolerance is enabled (ft.enable_ft_package=True): nsys profiling is disabled for this job, "
                "because ft_launcher restarts conflict with an nsys capture range"
            )
            from dataclasses import replace

            prof = replace(prof, use_nsys_profiler=False)
        return cls(prof, **kwargs)

    @property
    def artifacts(self) -> List[Path]:
        """Paths of every file written so far (traces, snapshots), on-demand windows' included."""
        return list(self._writer.paths) + (self._on_demand.artifacts if self._on_demand is not None else [])

    @property
    def captured_steps(self) -> Optional[range]:
        """The steps captured by the (current or last) window, or None if it never opened."""
        if self._first is None:
            return None
        return range(self._first, (self._last if self._last is not None else self._first - 1) + 1)

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> "ProfilingController":
        cfg = self.config
        if cfg is None or not cfg.enabled:
            return self
        self.rank = self._rank_override if self._rank_override is not None else detect_rank()
        world = self._world_override if self._world_override is not None else detect_world_size()
        outside = [r for r in cfg.profile_ranks if r >= world]
        if outside and self.rank == 0:
            log.warning(
                "profile_ranks=%s lists rank(s) %s outside the world of %d rank(s) (0..%d): they will not profile",
                cfg.profile_ranks, outside, world, world - 1,
            )
        self.selected = cfg.profiles_rank(self.rank)
        self.output_dir = Path(cfg.output_dir or DEFAULT_OUTPUT_DIR).expanduser().resolve()
        if cfg.on_demand:  # on every rank: a request may name any of them; step() becomes its dispatcher
            from bridge_plugins.runtime.on_demand import OnDemandWindows

            self._on_demand = OnDemandWindows(self, world).start()
            self.step = self._on_demand.step
        if not self.selected:
            return self  # an unselected rank does no profiling work at all
        self._backends = self._make_backends(cfg)
        if not self._backends:  # on_demand alone: no configured window
            self.selected = False
            return self
        log.info(
            "rank %d: profiling steps %d-%d with %s; artifacts under %s",
            self.rank, cfg.profile_step_start, cfg.profile_step_end - 1,
            ", ".join(b.name for b in self._backends), self.output_dir,
        )
        for b in list(self._backends):
            self._call(b, "on_enter")
        self._state, self._next = "armed", cfg.profile_step_start
        self._install_sigterm()
        return self

    def _make_backends(self, cfg: ProfilingConfig) -> List[Any]:
        backends: List[Any] = []
        if cfg.use_pytorch_profiler:
            from bridge_plugins.runtime.torch_profiler import TorchProfilerBackend

            backends.append(
                TorchProfilerBackend(cfg, self.rank, self.output_dir, self._writer, trigger=self.trigger)
            )
        if cfg.use_nsys_profiler:
            from bridge_plugins.runtime.nsys import NsysBackend

            backends.append(NsysBackend(cfg, self.rank))
        if cfg.record_memory_history:
            from bridge_plugins.runtime.memory import MemoryHistoryBackend

            backends.append(MemoryHistoryBackend(cfg, self.rank, self.output_dir, self._writer, trigger=self.trigger))
        return backends

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self._state == "active":
            why = f"{exc_type.__name__} raised" if exc_type else "the training loop ended"
            self._close_window(f"{why} after step {self._last_seen}")
        elif self._state == "armed":
            cfg = self.config
            why = f"{exc_type.__name__} raised" if exc_type else "the training loop ended"
            log.warning(
                "rank %s: the profiling window (steps %d-%d) was never reached: %s before step %d; "
                "nothing was captured by the profilers",
                self.rank, cfg.profile_step_start, cfg.profile_step_end - 1, why, cfg.profile_step_start,
            )
        self._each("on_exit")  # joins background exports: nothing is lost when the job ends
        self._restore_sigterm()
        self._state, self._next = "done", _NEVER
        if self._on_demand is not None:
            self.__dict__.pop("step", None)
            self._on_demand.close(exc_type)
        return False

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
                log.warning(
                    "rank %d: step %d is past the profiling window (steps %d-%d) that was never opened (a resume "
                    "past it, or skipped steps): the profilers capture nothing; memory history, if on, is "
                    "snapshotted now and stops",
                    self.rank, step, cfg.profile_step_start, end - 1,
                )
                self._state, self._next = "done", _NEVER
                self._each("on_exit")
                return _NOOP
            if step > cfg.profile_step_start:
                log.warning(
                    "rank %d: the run starts at step %d, inside the profiling window (steps %d-%d): capturing steps %d-%d",
                    self.rank, step, cfg.profile_step_start, end - 1, step, end - 1,
                )
        elif self._state == "active" and step >= end:
            self._close_window(f"step {step} came after step {self._last_seen}, skipping past the window end")
            return _NOOP
        self._scope.step = step
        return self._scope

    def _enter_step(self, step: int) -> None:
        first = self._state == "armed"
        if first:
            self._state, self._next = "active", -1
            self._first, self._last = step, None
            self._each("window_begin", step)
        self._last_seen = step
        self._each("step_begin", step, first)

    def _exit_step(self, step: int, exc_type) -> None:
        if self._state != "active":  # closed from inside the step (SIGTERM handler)
            return
        self._each("step_end", step)
        self._last = step
        if exc_type is not None:
            self._close_window(f"{exc_type.__name__} raised in step {step}")
        elif step >= self.config.profile_step_end - 1:
            self._close_window(None)

    def _close_window(self, reason: Optional[str], sync: bool = False) -> None:
        """Stop every backend and write what the window captured.

        A SIGTERM that arrives while this runs (``prof.stop()`` and a synchronous export take
        seconds on big windows) is held until the close is done, then handled.
        """
        self._state, self._next = "closing", _NEVER
        try:
            self._close_window_now(reason, sync)
        finally:
            self._state = "done"
        if self._sigterm_pending is not None:
            self._finish_sigterm(*self._sigterm_pending)

    def _close_window_now(self, reason: Optional[str], sync: bool) -> None:
        first, last = self._first, self._last_seen  # a step interrupted by SIGTERM counts: its events are in
        self._last = last
        self._each("window_end", first, last, sync)
        if reason is not None:
            cfg = self.config
            log.warning(
                "rank %d: profiling window steps %d-%d closed early (%s): captured steps %d-%d",
                self.rank, cfg.profile_step_start, cfg.profile_step_end - 1, reason, first, last,
            )
        else:
            log.info("rank %d: profiling window closed: captured steps %d-%d", self.rank, first, last)

    # ------------------------------------------------------------------ SIGTERM
    def _install_sigterm(self) -> None:
        """Handle SIGTERM on a selected rank from entry to exit (main thread only)."""
        if not self.handle_sigterm or threading.current_thread() is not threading.main_thread():
            return
        try:
            prev = signal.signal(signal.SIGTERM, self._on_sigterm)
        except (ValueError, OSError):
            return
        # None: a handler installed from C; treat it as the default action
        self._prev_sigterm = signal.SIG_DFL if prev is None else prev
        self._sigterm_installed = True

    def _restore_sigterm(self) -> None:
        if not self._sigterm_installed:
            return
        self._sigterm_installed = False
        try:
            if signal.getsignal(signal.SIGTERM) == self._on_sigterm:  # leave a later owner's handler alone
                signal.signal(signal.SIGTERM, self._prev_sigterm)
        except (ValueError, OSError):
            pass

    def _on_sigterm(self, signum, frame) -> None:
        """Write what was captured (close the window, finish background exports, snapshot memory),
        then let SIGTERM do what it would have done."""
        self._sigterm_pending = (signum, frame)
        if self._state == "closing":
            return  # arrived in the middle of a close, which handles it when it is done
        if self._state == "active":
            self._close_window(f"SIGTERM received during step {self._last_seen}", sync=True)  # handles it at the end
        else:
            self._finish_sigterm(signum, frame)

    def _finish_sigterm(self, signum, frame) -> None:
        self._sigterm_pending = None
        prev = self._prev_sigterm
        self._each("on_exit")
        self._restore_sigterm()
        if callable(prev):
            prev(signum, frame)
        elif prev == signal.SIG_DFL:
            signal.raise_signal(signum)

    # ------------------------------------------------------------------ failure isolation
    def _each(self, method: str, *args: Any) -> None:
        for b in list(self._backends):
            self._call(b, method, *args)

    def _call(self, backend: Any, method: str, *args: Any) -> None:
        try:
            getattr(backend, method)(*args)
        except Exception as e:  # profiling must never kill training
            log.error(
                "rank %s: %s failed in %s (%s: %s); it is switched off and training continues",
                self.rank, backend.name, method, type(e).__name__, e,
            )
            if backend in self._backends:
                self._backends.remove(backend)
            try:
                backend.abort()  # best effort: leave no profiler running, no recording on
            except Exception:
                pass
