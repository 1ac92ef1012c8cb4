"""A read in ranges that balances itself: every range in pieces, and a process done with its own
range's claims another's next piece where walking there (inflating and cutting, from the file's
beginning if the piece is behind it) costs less than the work it takes over: two processes' speeds
differ from one run to the next by a third or more on a shared machine. A claim is a byte read from
the range's pipe (atomic: each piece goes to one process, in order); consecutive pieces make one
run, and the reading process merges every run in file order (docs/scale.md, "One big trace on
every core").
"""

from __future__ import annotations

import array
import fcntl
import itertools
import os
import termios
from collections.abc import Callable, Generator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import BinaryIO

from bridge_plugins.analysis.trace import chunked
from bridge_plugins.analysis.trace.collect import Collector, Record
from bridge_plugins.analysis.trace.cutting import blocks, chunks
from bridge_plugins.analysis.trace.header import header
from bridge_plugins.analysis.trace.split_plan import PREFIX_COST

PIECE_BYTES = 4 << 20
"""A claimable piece's bytes of JSON (~10-15 ms of one process's reading here): the most that two
processes can end apart by, once both claim; each run after a gap costs a merge (~1 ms)."""
MAX_PIECES = 255
"""A claim is one byte."""
SKIP_COST = PREFIX_COST
"""What walking over a byte (inflated and cut, not decoded) costs against reading one: a process
claims another range's piece only where the pieces left there after it would keep their reader
busier than the walk keeps this one."""


def piece_starts(lo: int, hi: int) -> list[int]:
    """Where the pieces of the range from ``lo`` to ``hi`` start, and ``hi`` last: as many pieces
    of about PIECE_BYTES as fit (at most MAX_PIECES), all alike."""
    count = max(1, min(MAX_PIECES, round((hi - lo) / PIECE_BYTES)))
    return [lo + (hi - lo) * k // count for k in range(count)] + [hi]


@dataclass(frozen=True)
class Claims:
    """Every range's pieces (``starts[r]``: piece k of range r is ``starts[r][k]`` to
    ``starts[r][k + 1]``; the last range's last piece ends where the file does) and per range a
    pipe (``fds[r]``) whose bytes are the numbers of its pieces not yet claimed; piece 0 is the
    range's own process's from the start. Sent to the workers as it is: the descriptors are theirs
    too, forked with them."""

    fds: tuple[int, ...]
    starts: tuple[tuple[int, ...], ...]

    @classmethod
    def make(cls, bounds: list[int], total: int) -> Claims:
        """The ranges that start at ``bounds`` (the last ends at ``total``) in pieces, each pipe's
        writing end closed, so that an empty one reads as the end."""
        fds: list[int] = []
        starts = [piece_starts(lo, hi) for lo, hi in itertools.pairwise([*bounds, total])]
        try:
            for pieces in starts:
                r, w = os.pipe()
                fds.append(r)
                try:
                    os.write(w, bytes(range(1, len(pieces) - 1)))
                finally:
                    os.close(w)  # no writer left: a read of an empty pipe returns at once, with nothing
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise
        return cls(tuple(fds), tuple(map(tuple, starts)))

    def first(self, r: int) -> tuple[int, int | None]:
        """Range ``r``'s piece 0, its own process's (None: to the end of the file)."""
        return self._piece(r, 0)

    def _piece(self, r: int, k: int) -> tuple[int, int | None]:
        pieces = self.starts[r]
        last = r == len(self.starts) - 1 and k == len(pieces) - 2
        return pieces[k], None if last else pieces[k + 1]

    def _left(self, r: int) -> int:
        out = array.array("i", [0])
        fcntl.ioctl(self.fds[r], termios.FIONREAD, out)
        return out[0]

    def claim(self, own: int, s: Stream) -> tuple[int, int | None] | None:
        """The next piece, (start, end), for range ``own``'s process, whose stream is ``s``: one of
        its own range, else of the range whose next piece is the shortest walk away (from the
        file's beginning where the stream is past it) among those worth it: where the walk costs
        less than the work left there after that piece (SKIP_COST). None: none left, or none worth
        it."""
        got = os.read(self.fds[own], 1)
        if got:
            return self._piece(own, got[0])
        worth = []
        for r, pieces in enumerate(self.starts):
            left = self._left(r)
            if left:
                start = pieces[len(pieces) - 1 - left]
                walk = start if s.behind(start) else max(start - s.at, 0)
                if SKIP_COST * walk <= (left - 1) * (pieces[-1] - pieces[0]) / (len(pieces) - 1):
                    worth.append((walk, r))
        for _, r in sorted(worth):
            got = os.read(self.fds[r], 1)  # nothing: taken since it looked
            if got:
                return self._piece(r, got[0])
        return None

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)


class Stream:
    """The chunks of a trace's ``traceEvents`` in file order, each decoded into a collector or
    passed over (cut only), as one pass cuts them; ``head``: its header. Raises what reading the
    file raises."""

    def __init__(self, fh: chunked.ByteStream, total: int | None = None) -> None:
        self.total = total
        self.typed = chunked.typed_decoder(Record)
        self.head, rest, offset = header(blocks(fh))
        self.pieces: Generator = chunks(rest, offset, fh)
        self.next: tuple | None = None  # the chunk read but past the last range asked for
        self.at = offset  # where the next chunk starts, as far as is known
        self.done = -1  # where the last chunk decoded or passed over starts: a piece there is behind

    def behind(self, lo: int) -> bool:
        """Whether a chunk at or past ``lo`` was decoded or passed over: a range from there needs
        the file from its beginning."""
        return lo <= self.done

    def read(self, c: Collector, lo: int, hi: int | None) -> bool:
        """Into ``c``: the chunks whose first event lies at byte ``lo`` to ``hi`` (None: the end);
        those before ``lo`` passed over. False where the file must be read in one process: a cut
        fell inside a string (one pass cuts again there), or a chunk starts past ``total``, the
        size the plan took (a gzip trailer holds it modulo 2**32)."""
        while True:
            if self.next is None:
                try:
                    self.next = next(self.pieces)
                except StopIteration:
                    return True
            chunk, at, last = self.next
            self.at = at
            if self.total is not None and at > self.total:
                return False
            if hi is not None and at >= hi:
                return True
            self.next, self.done = None, at
            if at < lo:
                continue
            try:
                chunked.read_chunk(chunk, self.typed, at, last, c.on_event, c.on_records, c.on_chunk)
            except chunked.Truncated:
                return False


class Streams:
    """The streams of one open file (``raw``), each from its beginning, closing the one before (a
    context manager: the last closed on the way out); ``total`` as :class:`Stream` takes it."""

    def __init__(self, raw: BinaryIO, gzipped: bool, total: int | None = None) -> None:
        self.raw, self.gzipped, self.total = raw, gzipped, total
        self._open: AbstractContextManager | None = None

    def __call__(self) -> Stream:
        self.close()
        self.raw.seek(0)
        self._open = chunked.open_stream(self.raw, self.gzipped, 0)  # this thread inflates: see Ranges
        return Stream(self._open.__enter__(), self.total)

    def close(self) -> None:
        if self._open is not None:
            opened, self._open = self._open, None
            opened.__exit__(None, None, None)

    def __enter__(self) -> Streams:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_collector() -> Collector:
    """A collector for a run merged later (its header is not): it spills nothing and marks each
    flush (Collector.marks)."""
    c = Collector()
    c.marks = {}
    return c


def read_runs(
    open_stream: Callable[[], Stream], first: Collector, own: int, claims: Claims | None, lo: int, hi: int | None
) -> list[tuple[int, Collector]] | None:
    """Range ``lo`` to ``hi`` into ``first`` (without ``claims``: range ``own``'s piece 0 with
    them), then each piece this process claims: the runs it read, as (where each starts, its
    collector), ``first``'s first; None where :meth:`Stream.read` says False. ``open_stream``: the
    file's stream from its beginning, again where a piece lies behind this one's (the one before
    is done with). A run that no chunk starts in is left out (but ``first``)."""
    if claims is not None:
        lo, hi = claims.first(own)
    s = open_stream()
    first.on_header(s.head)
    runs = [(lo, first)]
    if not s.read(first, lo, hi):
        return None
    end = hi
    while claims is not None and (got := claims.claim(own, s)) is not None:
        a, b = got
        if s.behind(a):
            s = open_stream()
        if a != end:
            runs.append((a, run_collector()))
        if not s.read(runs[-1][1], a, b):
            return None
        end = b
    return [run for k, run in enumerate(runs) if k == 0 or run[1].data.events]
