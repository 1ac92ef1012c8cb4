"""The map over traces: read each trace in its own process, locally or on a Ray cluster.

``Workers.map`` runs the per-trace unit in parallel (a local process pool, biggest files first,
or one Ray task per trace on a cluster that sees the same files; a single trace is split over the
local processes instead: ``trace_jobs``) and returns the results in input order, so what is built
from them is byte-identical to ``jobs=1``. A trace that cannot be read, or whose worker keeps
dying, comes back as its one-line error (a skipped file). Ray and the split: docs/scale.md.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from bridge_plugins.analysis import heap
from bridge_plugins.analysis.per_trace import WORKER_DIED, Done, PerTrace, call
from bridge_plugins.analysis.per_trace import ClusterUnavailable as ClusterUnavailable  # where the CLI catches it

if TYPE_CHECKING:  # the pool's modules are imported when a pool runs
    from concurrent.futures import Future, ProcessPoolExecutor

POOL_RESTARTS = 2
"""How often a local pool is rebuilt after one of its processes died, before the unfinished files are skipped."""
_TRACE_JOBS: ContextVar[int] = ContextVar("trace_jobs", default=1)
FORKS = sys.platform == "linux"
"""Whether :func:`start_pool`'s workers are forked (and so share what was mapped before)."""


def trace_jobs() -> int:
    """The processes the per-trace unit may use for its one trace: ``--jobs`` when a local run reads
    a single trace (trace/split.py), else 1 (one process per trace, or a Ray task)."""
    return _TRACE_JOBS.get()


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, which a Slurm or container limit sets)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class Progress:
    """``summary: 12/125 files, 1.4/10.2 GB, 210 MB/s`` on stderr, rewritten in place.

    Only on a terminal and only for long runs (shown from ``after`` seconds on), so pipes, logs
    and CI output stay clean."""

    def __init__(
        self, label: str, total_files: int, total_bytes: int, stream: TextIO | None = None, after: float = 2.0
    ) -> None:
        self.label, self.total_files, self.total_bytes = label, total_files, total_bytes
        self.stream = sys.stderr if stream is None else stream
        self.on = self.stream.isatty()
        self.after, self.start, self.last = after, time.monotonic(), 0.0
        self.files = self.bytes = 0
        self.shown = False

    def advance(self, nbytes: int) -> None:
        self.files += 1
        self.bytes += nbytes
        now = time.monotonic()
        if not self.on or now - self.start < self.after or (now - self.last < 0.25 and self.files < self.total_files):
            return
        self.last = now
        rate = self.bytes / 1e6 / max(now - self.start, 1e-9)
        line = (
            f"{self.label}: {self.files}/{self.total_files} files, "
            f"{self.bytes / 1e9:.2f}/{self.total_bytes / 1e9:.2f} GB, {rate:.0f} MB/s"
        )
        self.stream.write("\r" + line + "\x1b[K")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


@dataclass(frozen=True)
class Workers:
    """Where the per-trace work runs: ``jobs`` local processes, or the Ray cluster at ``ray_address``."""

    jobs: int = 1
    ray_address: str | None = None
    label: str = "bridge-plugins"  # the progress line's prefix

    def map(self, fn: Callable[[Path], object], paths: Sequence[Path], catch: type[Exception]) -> list[Done]:
        """``fn(path)`` for every path, in input order; an exception of type ``catch`` becomes the
        file's error (``str(e)``). Any other exception from ``fn`` ends the run, as it would in a loop."""
        paths = [Path(p) for p in paths]
        sizes = [file_size(p) for p in paths]
        progress = Progress(self.label, len(paths), sum(sizes))
        done: dict[int, Done] = {}
        try:
            if self.ray_address is not None:
                from bridge_plugins.analysis.ray_map import ray_map  # imports ray

                outcomes = ray_map(fn, paths, catch, self.ray_address)
            elif self.jobs <= 1 or len(paths) <= 1:
                outcomes = _serial(fn, paths, catch, self.jobs if len(paths) == 1 else 1)
            else:
                outcomes = _pool(fn, paths, sizes, catch, min(self.jobs, len(paths)))
            for i, outcome in outcomes:
                done[i] = outcome
                progress.advance(sizes[i])
        finally:
            progress.close()
        return [done[i] for i in range(len(paths))]


def file_size(p: Path) -> int:
    """Bytes on disk; 0 where it cannot be read (its reader then says why)."""
    try:
        return p.stat().st_size
    except OSError:
        return 0


def _serial(fn: PerTrace, paths: Sequence[Path], catch: type[Exception], jobs: int = 1) -> Iterator[tuple[int, Done]]:
    for i, p in enumerate(paths):
        token = _TRACE_JOBS.set(jobs)
        try:
            done = call(fn, p, catch)
        finally:
            _TRACE_JOBS.reset(token)
        yield i, done


def start_pool(jobs: int) -> ProcessPoolExecutor:
    """A pool of ``jobs`` processes, started now. Forked (on Linux) while the caller has one thread,
    so they start without re-importing anything; they never see SIGINT: a Ctrl-C is the caller's to
    handle (it would otherwise kill them one by one), who calls :func:`terminate` on the way out."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork" if FORKS else "spawn")
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_end_with, initargs=(os.getpid(),))
    try:
        # Blocked while the workers are forked (on the first submit): they inherit it blocked, and
        # a Ctrl-C meanwhile waits for this process, which gets it on unblocking, still in here.
        with _sigint_blocked():
            pool.submit(int)
    except BaseException:
        terminate(pool)
        raise
    return pool


PR_SET_PDEATHSIG = 1  # Linux prctl: the signal a process gets when the one that forked it ends


def _end_with(parent: int) -> None:
    """A pool worker's first act: be killed when the process that started it ends, so that a
    command stopped by SIGTERM or SIGKILL leaves no worker waiting on the pool's queue forever."""
    prctl = getattr(heap.libc(), "prctl", None)
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it ended before that took effect
        os._exit(0)


@contextmanager
def _sigint_blocked() -> Iterator[None]:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def ending(pool: ProcessPoolExecutor) -> Callable[[], None]:
    """Let ``pool``'s processes end now that every task it was given is done, while the caller goes
    on (their exit takes a few ms: a read in ranges merges meanwhile); the function returned waits
    until they and the pool's thread are gone (a process is forked only without other threads)."""
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False)
    return manager.join if manager is not None else _nothing


def _nothing() -> None:
    pass


def terminate(pool: ProcessPoolExecutor) -> None:
    """Stop ``pool``'s processes now (an exception or Ctrl-C in the caller), and its threads."""
    manager = getattr(pool, "_executor_manager_thread", None)
    for process in list(getattr(pool, "_processes", {}).values()):  # Python 3.14 has terminate_workers()
        process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    # Its manager thread, seeing the workers gone, closes the pool's wake-up pipe; at exit Python
    # writes to that pipe without the lock the thread holds, and a thread still closing it then
    # makes "Exception ignored ... Bad file descriptor" (3.11). Let it finish first.
    if manager is not None:
        manager.join(timeout=10)


def _pool(
    fn: PerTrace, paths: Sequence[Path], sizes: list[int], catch: type[Exception], jobs: int
) -> Iterator[tuple[int, Done]]:
    """A pool of ``jobs`` processes. When one dies (SIGKILL, the OOM killer), the pool is broken and
    every file it had not finished fails with it; those files are then read again one per fresh
    process, so only the file that kills its reader is skipped, after POOL_RESTARTS tries."""
    failed: list[int] = []
    order = sorted(range(len(paths)), key=lambda i: -sizes[i])  # biggest first
    yield from _run(fn, paths, catch, order, jobs, failed)
    for i in failed:
        for _ in range(POOL_RESTARTS):
            again: list[int] = []
            yield from _run(fn, paths, catch, [i], 1, again)
            if not again:
                break
        else:
            yield (
                i,
                Done(
                    paths[i], error=f"{paths[i]}: " + WORKER_DIED.format(why="killed or out of memory", n=POOL_RESTARTS)
                ),
            )


def _run(
    fn: PerTrace,
    paths: Sequence[Path],
    catch: type[Exception],
    order: list[int],
    jobs: int,
    failed: list[int],
) -> Iterator[tuple[int, Done]]:
    """Read ``order`` in a pool of ``jobs``; the files lost to a broken pool go to ``failed``.
    On KeyboardInterrupt (or any exception) the workers are terminated before it is passed on."""
    from concurrent.futures import FIRST_COMPLETED, wait
    from concurrent.futures.process import BrokenProcessPool

    pool = start_pool(min(jobs, len(order)))
    try:
        with _sigint_blocked():  # spawn (not Linux) starts workers as the queue grows
            futures: dict[Future, int] = {pool.submit(call, fn, paths[i], catch): i for i in order}
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in sorted(finished, key=futures.__getitem__):
                try:
                    outcome = f.result()
                except BrokenProcessPool:
                    failed.append(futures[f])
                    continue
                yield futures[f], outcome
    except BaseException:
        terminate(pool)
        raise
    pool.shutdown(wait=True)
