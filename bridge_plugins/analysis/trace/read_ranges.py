"""One trace read in byte ranges, byte-identical to one process: this process reads the first range,
a worker of its own each of the others (split_worker.py), and the parts are merged in file order
(merge.py). A command may start the workers ahead (:func:`reading_ahead`), before it imports the
analyses; split.collect_trace finishes the read. Where and how many: split_plan.py.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from bridge_plugins.analysis.parallel import FORKS, Workers, ending, file_size, start_pool, terminate
from bridge_plugins.analysis.trace import chunked, part_file, range_runs, split_plan, split_worker
from bridge_plugins.analysis.trace.collect import Collector
from bridge_plugins.analysis.trace.merge import merge
from bridge_plugins.analysis.trace.reader import named_errors
from bridge_plugins.jobdir.regular_file import open_regular

if TYPE_CHECKING:  # imported when a pool runs
    from concurrent.futures import Future, ProcessPoolExecutor

_AHEAD: dict[str, Ranges] = {}
"""The reads started ahead (:func:`reading_ahead`), by the file's real path, until collected."""


def _ahead_key(path: Path) -> str:
    return os.path.realpath(path)


def taken_over(path: Path) -> Ranges | None:
    """The read of ``path`` started ahead, now the caller's to finish; None if there is none."""
    return _AHEAD.pop(_ahead_key(path), None)


@contextlib.contextmanager
def reading_ahead(paths: list[str], workers: Workers) -> Iterator[bool]:
    """Where ``paths`` is one Chrome trace file that ``workers`` will read in ranges (locally, with
    ``--jobs`` more than 1), start its workers now:
    they read while this process still imports the analyses (``HEAD_START_BYTES`` more each), and
    split.collect_trace takes them over. A read not taken over is stopped on the way out. A file
    that cannot be opened starts nothing: its reader says why, as without this. Yields whether a
    read was started."""
    ahead = None
    local = workers.ray_address is None
    if local and len(paths) == 1 and workers.jobs > 1 and str(paths[0]).endswith((".json", ".json.gz")):
        path = Path(paths[0])
        size = file_size(path)
        ranges, total = split_plan.plan_ranges(path, size, workers.jobs, measured=True)
        if ranges > 1:
            with contextlib.suppress(Exception):
                ahead = _AHEAD[_ahead_key(path)] = Ranges(path, ranges, total, split_plan.HEAD_START_BYTES)
    try:
        yield ahead is not None
    finally:
        if ahead is not None and _AHEAD.get(_ahead_key(ahead.path)) is ahead:
            del _AHEAD[_ahead_key(ahead.path)]
            ahead.close()


class Ranges:
    """The file in ranges of its ``total`` bytes of JSON (split_plan.range_bounds): every range but
    the first read by a worker of its own, started here, that reads the file itself (inflating what
    comes before its range too); the first read into a collector by :meth:`finish`, which merges
    the workers' parts into it in file order. Every process inflates in the thread that reads: they
    fill the cores between them."""

    def __init__(self, path: Path, ranges: int, total: int, head_start: int = 0) -> None:
        from concurrent.futures.process import BrokenProcessPool

        self.path = path
        self.part_fds: list[int] = []
        self.claims: range_runs.Claims | None = None
        self.wait_end: Callable[[], None] | None = None  # set once every part is in (parallel.ending)
        with named_errors(path):
            self.raw = open_regular(path)
        try:
            with named_errors(path):
                identity = split_worker.file_identity(self.raw)
            self.starts = split_plan.range_bounds(total, ranges, head_start)
            # made before the workers are forked, so theirs too: where each sends its part back,
            # and the pipes its pieces are claimed from (range_runs.py)
            self.part_fds = [part_file.new_file() for _ in range(ranges - 1)]
            if FORKS:
                self.claims = range_runs.Claims.make(self.starts, total)
            # the file is open: each worker checks that it opens the same one
            self.pool: ProcessPoolExecutor | None = start_pool(ranges - 1)
        except BaseException:
            self.raw.close()
            self._close_part_files()
            if self.claims is not None:
                self.claims.close()
            raise
        self.futures: list[Future] | None = None
        ends = [*self.starts[2:], None]
        try:
            self.futures = [
                self.pool.submit(split_worker.collect_range, str(path), lo, hi, total, identity, fd, self.claims, r)
                for r, (lo, hi, fd) in enumerate(zip(self.starts[1:], ends, self.part_fds, strict=True), 1)
            ]
        except BrokenProcessPool:  # a worker died as it started: finish() says read it again
            pass
        except BaseException:
            self.close()
            raise

    def finish(self, c: Collector) -> bool:
        """Read the first range into ``c`` and merge the workers' parts (``read_on``: how many
        processes read it). False: read the file again
        in one process (a cut inside a string, a part past a cap, a worker that died or found
        another file at the path). Raises what one pass raises."""
        done = False
        try:
            with named_errors(self.path):
                done = self.futures is not None and self._merged(c)
        finally:
            self.close(done)
        if done:
            c.data.read_on = len(self.starts)
        return done

    def _merged(self, c: Collector) -> bool:
        from concurrent.futures.process import BrokenProcessPool

        assert self.futures is not None
        with range_runs.Streams(self.raw, self.path.name.endswith(".gz")) as streams:
            own = range_runs.read_runs(streams, c, 0, self.claims, 0, self.starts[1])
            if own is None:
                return False
        runs = [(at, r.data, r.marks) for at, r in own[1:]]
        for k, (future, fd) in enumerate(zip(self.futures, self.part_fds, strict=True)):
            try:
                kind, value = future.result()
                if k == len(self.futures) - 1 and self.pool is not None:
                    self.wait_end = ending(self.pool)  # the last part is in: the workers end while it merges
                if kind == "shared":
                    kind, value = "part", part_file.loads(value, fd)
            except (BrokenProcessPool, OSError):  # OSError: the memory file could not be mapped
                return False
            if kind == "error":
                raise chunked.Unreadable(value)
            if kind != "part":
                return False
            runs += value
        runs.sort(key=lambda run: run[0])  # file order: each run starts at a piece's own byte
        return all(merge(c, part, marks=marks) for _, part, marks in runs)

    def close(self, done: bool = False) -> None:
        """The workers let finish (``done``: each sent its part) or stopped, and the file closed."""
        if self.pool is not None:
            if self.wait_end is not None:
                self.wait_end()
            elif done:
                self.pool.shutdown(wait=True)
            else:
                terminate(self.pool)
            self.pool = None
        self.raw.close()
        self._close_part_files()
        if self.claims is not None:
            self.claims.close()
            self.claims = None

    def _close_part_files(self) -> None:
        for fd in self.part_fds:
            if fd >= 0:
                os.close(fd)
        self.part_fds = []
