"""The job side of on-demand profiling: a poller thread that reads requests, and the rules that
accept one. The controller takes the requests and runs the windows; this module never imports it.

Idle cost: nothing happens per step. When the poller has a request, or rank 0 needs a step sample
for the progress file, it calls the controller's ``wake()`` under the controller's lock, so the
next ``step()`` takes the slow path. Acceptance happens on the training thread
(:meth:`Acceptance.window_config`), so "stale" is exact and every rank decides alike.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

from bridge_plugins.config.profiling import ProfilingConfig
from bridge_plugins.jobdir.on_demand import (
    ProtocolError,
    Request,
    list_requests,
    poll_interval,
    read_request,
    requests_dir,
)
from bridge_plugins.runtime.memory import can_record as can_record_memory
from bridge_plugins.runtime.on_demand_progress import publish_progress

log = logging.getLogger("bridge_plugins")


class RequestPoller:
    """Polls ``on_demand/requests/`` on a thread and queues new requests for the training thread.

    ``lock`` and ``wake`` are the controller's: ``wake()`` (called with ``lock`` held) makes its
    next ``step()`` take the slow path. Rank 0 also publishes progress.json from the step samples.
    """

    def __init__(
        self,
        cfg: ProfilingConfig,
        rank: int,
        world_size: int,
        output_dir: Path,
        lock: threading.RLock,
        wake: Callable[[], None],
    ) -> None:
        self.cfg, self.rank, self.world_size, self.output_dir = cfg, rank, world_size, output_dir
        self.interval = poll_interval()
        self._lock, self._wake = lock, wake
        self._can_record_memory = can_record_memory()  # told to the trigger in progress.json
        self._pending: list[Request] = []
        self._want_sample = False
        self._samples: deque[tuple[int, float]] = deque(maxlen=10)  # (step, epoch seconds) at a step's start
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> RequestPoller:
        try:
            seen = {name for name, _ in list_requests(self.output_dir, create=True)}  # an earlier job's or attempt's
        except OSError as e:  # the poller says so again, once; training goes on
            log.error("rank %d: on-demand directory %s unusable (%s)", self.rank, requests_dir(self.output_dir), e)
            seen = set()
        if seen and self.rank == 0:
            log.info("on-demand: %d request file(s) from before this job started are ignored", len(seen))
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

    def stop(self) -> None:
        """Stop polling; rank 0 marks progress.json finished."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(5.0, 2 * self.interval))
        if self.rank == 0:
            try:
                self._publish("finished")
            except OSError as e:
                log.error("rank 0: writing the final on-demand progress failed (%s)", e)

    # ------------------------------------------------------------------ training thread (lock held by the caller or here)
    def take(self, step: int) -> list[Request]:
        """The requests queued since the last call, oldest id first; samples ``step`` if asked to."""
        with self._lock:
            if self._want_sample:
                self._samples.append((step, time.time()))
                self._want_sample = False
            pending, self._pending = sorted(self._pending, key=lambda r: r.id), []
        return pending

    def wants_step(self) -> bool:
        """Something waits for the next step (call with the lock held)."""
        return bool(self._pending) or self._want_sample

    # ------------------------------------------------------------------ any thread
    def submit(self, request: Request) -> None:
        """Queue a request; the training thread decides at its next step whether to accept it."""
        with self._lock:
            self._pending.append(request)
            self._wake()

    # ------------------------------------------------------------------ poller thread
    def _poll(self, seen: set[str]) -> None:
        errors: set[str] = set()
        while not self._stop.wait(self.interval):
            if self.rank == 0:
                try:  # apart from the requests: rank 0 must never skip a request the other ranks take
                    self._publish("running")
                except Exception as e:
                    self._say_once(errors, "writing on-demand progress", e)
                with self._lock:
                    self._want_sample = True
                    self._wake()
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

    def _say_once(self, said: set[str], what: str, e: Exception) -> None:
        """Log a failure the first time it happens; by kind and errno, as the message can name a new temp file each poll."""
        kind = f"{what} {type(e).__name__} {getattr(e, 'errno', None)}"
        if kind not in said:
            said.add(kind)
            log.error("rank %d: %s failed (%s: %s); training continues", self.rank, what, type(e).__name__, e)

    def _publish(self, state: str) -> None:
        """Rank 0 writes progress.json from the (step, time) samples the training thread took."""
        with self._lock:
            samples = list(self._samples)
        publish_progress(
            self.output_dir, state, samples, self.cfg, self.interval, self.world_size, self._can_record_memory
        )


@dataclasses.dataclass
class Acceptance:
    """What the ranks agree on before a request becomes a window: the spans accepted so far."""

    cfg: ProfilingConfig
    rank: int
    world_size: int
    output_dir: Path
    configured_memory: bool
    """This rank records memory history for the configured window (no snapshot of its own then)."""
    spans: list[tuple[int, int, int]] = dataclasses.field(default_factory=list)  # (start, end, id)

    def window_config(self, req: Request, step: int) -> ProfilingConfig | None:
        """The config of the window that answers ``req`` on this rank, or None (logged why)."""
        what = f"on-demand request {req.id} (steps {req.start}-{req.end - 1})"
        cfg, rank = self.cfg, self.rank
        if req.start < step:
            log.warning("rank %d: %s ignored: stale, this rank is already at step %d", rank, what, step)
            return None
        if cfg.has_window and req.overlaps(cfg.profile_step_start, cfg.profile_step_end):
            log.warning(
                "rank %d: %s ignored: it overlaps the configured profiling window (steps %d-%d)",
                rank,
                what,
                cfg.profile_step_start,
                cfg.profile_step_end - 1,
            )
            return None
        clash = next((rid for a, b, rid in self.spans if req.overlaps(a, b)), None)
        if clash is not None:
            log.warning("rank %d: %s ignored: it overlaps on-demand request %d", rank, what, clash)
            return None
        self.spans.append((req.start, req.end, req.id))
        outside = [r for r in req.ranks if r >= self.world_size]
        if outside and rank == 0:
            log.warning(
                "rank 0: %s names rank(s) %s outside the world of %d: they do not profile",
                what,
                outside,
                self.world_size,
            )
        if not req.selects(rank):
            log.debug("rank %d: %s does not name this rank", rank, what)
            return None
        memory = req.memory
        if memory and self.configured_memory and req.start < cfg.profile_step_end:
            log.warning(
                "rank %d: %s: no memory snapshot of its own, the configured memory history records until step %d",
                rank,
                what,
                cfg.profile_step_end - 1,
            )
            memory = False
        return dataclasses.replace(
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


def log_accepted(rank: int, req: Request, window_cfg: ProfilingConfig) -> None:
    memory = " with a memory snapshot" if window_cfg.record_memory_history else ""
    log.info("rank %d: on-demand request %d (steps %d-%d) accepted%s", rank, req.id, req.start, req.end - 1, memory)
