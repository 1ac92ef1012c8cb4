"""The job side of on-demand profiling: a poller thread that reads requests, and the windows it arms.

With ``ProfilingConfig.on_demand`` the controller starts :class:`OnDemandWindows` on every rank
(any rank may be named by a request). Design:

- **Idle cost.** The controller's ``step`` becomes this object's ``step``: the same single
  comparison against one threshold, ``next``, the earliest step at which anything must happen
  (the configured window, an armed on-demand window). Nothing is stored or read per step.
- **Learning the step without per-step work.** The poller never reads a step counter. When it
  needs one (rank 0, once per poll interval, for the progress file) or has a new request, it
  lowers ``next`` to -1 under a lock; the training thread's next ``step()`` takes the slow path,
  records ``(step, time)``, handles the requests and recomputes ``next`` under the same lock, so
  neither side loses the other's update.
- **Acceptance happens on the training thread**, at the first step after the poller read the
  request, so "stale" is exact: a request is accepted iff ``start >= step``, does not overlap the
  configured window and does not overlap an earlier accepted request. Every rank applies the same
  rules to the same file, so the ranks agree; a rank that is not named only records the span.
- **Each accepted window is run by a ProfilingController of its own** (PyTorch profiler, optional
  memory history, ``trigger=<id>`` in its file names): opening, closing, early closes, background
  export and failure isolation are the controller's, said once. Finished windows are exited (their
  exports joined) when the job's controller exits, or at SIGTERM: one ``signals.SignalGuard`` holds
  signals in every window's close and join, so no second SIGTERM or Ctrl-C cuts a write short.
- **Progress** (rank 0's progress.json, for the trigger's planning) is written by the poller from
  the training thread's samples (``on_demand_progress``).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import deque
from collections.abc import Callable

from bridge_plugins.jobdir.on_demand import (
    ProtocolError,
    Request,
    list_requests,
    poll_interval,
    read_request,
    requests_dir,
)
from bridge_plugins.runtime.controller import ProfilingController
from bridge_plugins.runtime.memory import can_record as can_record_memory
from bridge_plugins.runtime.on_demand_progress import publish_progress
from bridge_plugins.runtime.signals import SignalGuard
from bridge_plugins.runtime.steps import NOOP as _NOOP

log = logging.getLogger("bridge_plugins")


class OnDemandWindows:
    """Arms and runs the windows that ``bridge-plugins trigger`` asks for, beside the configured one."""

    def __init__(self, ctl: ProfilingController, world_size: int):
        self.ctl, self.cfg, self.rank, self.world_size = ctl, ctl.config, ctl.rank, world_size
        self.output_dir = ctl.output_dir
        self.interval = poll_interval()
        self._can_record_memory = can_record_memory()  # told to the trigger in progress.json
        self.next = -1  # the first step() recomputes it
        # re-entrant: the SIGTERM handler runs on the training thread, maybe inside its critical section
        self._lock = threading.RLock()
        self._pending: list[Request] = []
        self._want_sample = False
        self._samples: deque = deque(maxlen=10)  # (step, epoch seconds) at the start of a step
        self._spans: list[tuple] = []  # (start, end, id) of every accepted request, for overlaps
        self._windows: list[ProfilingController] = []  # this rank's armed or active windows
        self._finished: list[ProfilingController] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._signals = SignalGuard(self._on_sigterm, f"rank {self.rank} on-demand")

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> OnDemandWindows:
        try:
            seen = {name for name, _ in list_requests(self.output_dir, create=True)}  # an earlier job's or attempt's
        except OSError as e:  # the poller says so again, once; training goes on
            log.error("rank %d: on-demand directory %s unusable (%s)", self.rank, requests_dir(self.output_dir), e)
            seen = set()
        if seen and self.rank == 0:
            log.info("on-demand: %d request file(s) from before this job started are ignored", len(seen))
        if self.ctl.handle_sigterm:
            self._signals.install()
        self._thread = threading.Thread(target=self._poll, args=(seen,), name="bridge_plugins-on-demand", daemon=True)
        self._thread.start()
        if self.rank == 0:
            log.info(
                "on-demand profiling on: `bridge-plugins trigger %s --steps N` profiles the next N steps "
                "(polled every %g s)",
                self.output_dir,
                self.interval,
            )
        return self

    def close(self, exc_type=None) -> None:
        """Stop polling, close an open window (writing what it captured), join every export."""
        try:
            with self._signals.hold():  # a SIGTERM or Ctrl-C meanwhile is delivered once all is written
                self._shut_down(lambda w: w.__exit__(exc_type, None, None))
        finally:
            self._signals.uninstall()

    def _on_sigterm(self) -> None:
        """SIGTERM (signals are held): every window writes what it captured, as the job's controller
        does; the guard then delivers the signal."""
        self._shut_down(ProfilingController._on_sigterm)

    def _shut_down(self, close_window: Callable[[ProfilingController], None]) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(5.0, 2 * self.interval))
        windows, self._windows = self._windows, []
        self._finished += windows
        for w in self._finished:  # closing a finished window joins its background export
            close_window(w)
        if self.rank == 0:
            try:
                self._publish("finished")
            except OSError as e:
                log.error("rank 0: writing the final on-demand progress failed (%s)", e)

    @property
    def artifacts(self) -> list:
        return [p for w in self._finished + self._windows for p in w.artifacts]

    # ------------------------------------------------------------------ called from any thread
    def submit(self, request: Request) -> None:
        """Queue a request; the training thread decides at its next step whether to arm it."""
        with self._lock:
            self._pending.append(request)
            self.next = -1

    # ------------------------------------------------------------------ training thread
    def step(self, step: int):
        if step < self.next:
            return _NOOP
        return self._step_slow(step)

    def _step_slow(self, step: int):
        with self._lock:
            if self._want_sample:
                self._samples.append((step, time.time()))
                self._want_sample = False
            pending, self._pending = sorted(self._pending, key=lambda r: r.id), []
        for request in pending:
            try:
                self._consider(request, step)
            except Exception as e:  # profiling must never kill training
                log.error(
                    "rank %d: on-demand request %d failed (%s: %s); training continues",
                    self.rank,
                    request.id,
                    type(e).__name__,
                    e,
                )
        scope = ProfilingController.step(self.ctl, step)  # the configured window (the class's own step)
        for w in self._windows:
            s = w.step(step)
            if s is not _NOOP:
                scope = s  # windows never overlap (see _consider): at most one is not the no-op
        with self._lock:
            self._finished += [w for w in self._windows if w._state == "done"]
            self._windows = [w for w in self._windows if w._state != "done"]
            if self._pending or self._want_sample:
                self.next = -1
            else:
                self.next = min([self.ctl._next] + [w._next for w in self._windows])
        return scope

    def _consider(self, req: Request, step: int) -> None:
        what = f"on-demand request {req.id} (steps {req.start}-{req.end - 1})"
        cfg = self.cfg
        if req.start < step:
            log.warning("rank %d: %s ignored: stale, this rank is already at step %d", self.rank, what, step)
            return
        if cfg.has_window and req.overlaps(cfg.profile_step_start, cfg.profile_step_end):
            log.warning(
                "rank %d: %s ignored: it overlaps the configured profiling window (steps %d-%d)",
                self.rank,
                what,
                cfg.profile_step_start,
                cfg.profile_step_end - 1,
            )
            return
        clash = next((rid for a, b, rid in self._spans if req.overlaps(a, b)), None)
        if clash is not None:
            log.warning("rank %d: %s ignored: it overlaps on-demand request %d", self.rank, what, clash)
            return
        self._spans.append((req.start, req.end, req.id))
        outside = [r for r in req.ranks if r >= self.world_size]
        if outside and self.rank == 0:
            log.warning(
                "rank 0: %s names rank(s) %s outside the world of %d: they do not profile",
                what,
                outside,
                self.world_size,
            )
        if not req.selects(self.rank):
            log.debug("rank %d: %s does not name this rank", self.rank, what)
            return
        memory = req.memory
        if memory and cfg.record_memory_history and self.ctl.selected and req.start < cfg.profile_step_end:
            log.warning(
                "rank %d: %s: no memory snapshot of its own, the configured memory history records until step %d",
                self.rank,
                what,
                cfg.profile_step_end - 1,
            )
            memory = False
        window_cfg = dataclasses.replace(
            cfg,
            use_nsys_profiler=False,
            use_pytorch_profiler=True,
            record_memory_history=memory,
            on_demand=False,
            profile_step_start=req.start,
            profile_step_end=req.end,
            profile_ranks=[],
            output_dir=str(self.output_dir),
        )
        window = ProfilingController(
            window_cfg, rank=self.rank, world_size=self.world_size, signals=self._signals, trigger=req.id
        )
        window.__enter__()
        self._windows.append(window)
        log.info("rank %d: %s accepted%s", self.rank, what, " with a memory snapshot" if memory else "")

    # ------------------------------------------------------------------ poller thread
    def _poll(self, seen: set) -> None:
        errors: set = set()
        while not self._stop.wait(self.interval):
            if self.rank == 0:
                try:  # apart from the requests: rank 0 must never skip a request the other ranks take
                    self._publish("running")
                except Exception as e:
                    self._say_once(errors, "writing on-demand progress", e)
                with self._lock:
                    self._want_sample, self.next = True, -1
            try:
                for name, path in list_requests(self.output_dir):
                    if name in seen:
                        continue
                    seen.add(name)
                    try:
                        self.submit(read_request(path))
                    except ProtocolError as e:
                        log.warning("rank %d: on-demand request ignored: %s", self.rank, e)
            except Exception as e:  # an unreadable directory, a full disk: say it once, keep training
                self._say_once(errors, "on-demand polling", e)

    def _say_once(self, said: set, what: str, e: Exception) -> None:
        msg = f"{what} failed ({type(e).__name__}: {e})"
        if msg not in said:
            said.add(msg)
            log.error("rank %d: %s; training continues", self.rank, msg)

    def _publish(self, state: str) -> None:
        """Rank 0 writes progress.json from the (step, time) samples the training thread took."""
        with self._lock:
            samples = list(self._samples)
        publish_progress(
            self.output_dir, state, samples, self.cfg, self.interval, self.world_size, self._can_record_memory
        )
