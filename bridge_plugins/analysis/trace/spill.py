"""Columns of per-event numbers that move to an unnamed temporary file as they grow, so the memory a
trace takes does not grow with the trace (issue 18: under 250 MB for a 3 GB trace).

The collector appends to plain ``array.array`` columns (fast) and hands them to :meth:`Spill.write`
when they reach ``SPILL_AT`` elements; :meth:`Spill.read` gives back each column whole, as numpy,
when the figures are computed, one group (a thread's operators, say) at a time.
"""

from __future__ import annotations

import os
import tempfile
from array import array
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where the columns are read back: a range worker never imports numpy
    import numpy as np

SPILL_AT = 1 << 18  # elements per column kept in memory before they are written out
PREADV = hasattr(os, "preadv")


class Spill:
    """Blocks of a group of same-length columns, written in turn to one temporary file."""

    def __init__(self) -> None:
        # deleted when closed or when the process ends; it lives as long as the collected data
        self._file = tempfile.TemporaryFile()  # noqa: SIM115
        self._blocks: list[int] = []

    def write(self, columns: tuple[array, ...]) -> None:
        """Append the columns' contents to the file and empty them. Flushed at once: the file is read
        at offsets (``os.preadv``, no shared offset moved), by this process or one forked from it
        (chrome.py's second core), and what a buffer still held would be written twice."""
        self._blocks.append(len(columns[0]))
        for c in columns:
            c.tofile(self._file)
            del c[:]
        self._file.flush()

    def _read_at(self, into: np.ndarray, at: int) -> None:
        """Fill ``into`` from the file's byte ``at`` on."""
        view = into.data.cast("B")
        done = 0
        while done < len(view):
            if PREADV:
                n = os.preadv(self._file.fileno(), [view[done:]], at + done)
            else:  # pragma: no cover - Windows, where no process is forked
                self._file.seek(at + done)
                n = self._file.readinto(view[done:])
            if n == 0:
                raise OSError(f"a spill file ended {len(view) - done} bytes early")
            done += n

    def read(self, tail: tuple[array, ...], which: tuple[int, ...] | None = None) -> list[np.ndarray]:
        """Columns whole (all, or those at the indices ``which``): what was written, then what is
        still in ``tail``."""
        import numpy as np

        which = tuple(range(len(tail))) if which is None else which
        n = sum(self._blocks) + len(tail[0])
        out = {i: np.empty(n, dtype=np.dtype(tail[i].typecode)) for i in which}
        at = offset = 0
        for size in self._blocks:
            for i, c in enumerate(tail):
                col = out.get(i)
                if col is not None:
                    self._read_at(col[at : at + size], offset)
                offset += size * c.itemsize
            at += size
        for i, col in out.items():
            c = tail[i]
            col[at:] = np.frombuffer(c, dtype=col.dtype) if len(c) else col[at:at]
        return [out[i] for i in which]

    def blocks(self, tail: tuple[array, ...], which: tuple[int, ...] | None = None) -> Iterator[list[np.ndarray]]:
        """The columns (all, or those at ``which``) a block at a time, in order: each written
        block, then what is still in ``tail``."""
        import numpy as np

        which = tuple(range(len(tail))) if which is None else which
        at = 0
        for size in self._blocks:
            out = {}
            for i, c in enumerate(tail):
                if i in which:
                    out[i] = col = np.empty(size, dtype=np.dtype(c.typecode))
                    self._read_at(col, at)
                at += size * c.itemsize
            yield [out[i] for i in which]
        yield columns(tail, None, which)

    @property
    def size(self) -> int:
        """Elements per column written so far."""
        return sum(self._blocks)

    def close(self) -> None:
        self._file.close()


def columns(tail: tuple[array, ...], spill: Spill | None, which: tuple[int, ...] | None = None) -> list[np.ndarray]:
    """The whole columns of a group (all, or those at ``which``): from ``spill`` if some were written
    out, else ``tail`` alone."""
    import numpy as np

    if spill is not None:
        return spill.read(tail, which)
    picked = tail if which is None else tuple(tail[i] for i in which)
    return [
        np.frombuffer(c, dtype=np.dtype(c.typecode)) if len(c) else np.zeros(0, np.dtype(c.typecode)) for c in picked
    ]


def blocks(
    tail: tuple[array, ...], spill: Spill | None, which: tuple[int, ...] | None = None
) -> Iterator[list[np.ndarray]]:
    """The columns of a group (all, or those at ``which``) a block at a time, in order (a block: what
    one write took, ``SPILL_AT`` elements or a little more): how a pass over millions of events keeps
    its memory flat."""
    if spill is not None:
        yield from spill.blocks(tail, which)
    else:
        yield columns(tail, None, which)


class ThreadColumns(Mapping):
    """Per-thread (ts, dur, name id) columns of one kind of CPU event (operators, Python frames...).

    The collector appends to ``tails`` and calls :meth:`spill` when a thread's reach ``SPILL_AT``;
    readers get ``table[key]``: the thread's columns whole, as numpy (what was spilled read back),
    one thread at a time. :meth:`length` counts without reading.
    """

    def __init__(self) -> None:
        self.tails: dict[tuple, tuple[array, array, array]] = {}
        self.spilled: dict[tuple, Spill] = {}

    def tail(self, key: tuple) -> tuple[array, array, array]:
        arrays = self.tails.get(key)
        if arrays is None:
            arrays = self.tails[key] = (array("d"), array("d"), array("i"))
        return arrays

    def spill(self, key: tuple) -> None:
        s = self.spilled.get(key)
        if s is None:
            s = self.spilled[key] = Spill()
        s.write(self.tails[key])

    def length(self, key: tuple) -> int:
        s = self.spilled.get(key)
        return len(self.tails[key][0]) + (s.size if s is not None else 0)

    def blocks(self, key: tuple) -> Iterator[list[np.ndarray]]:
        """The thread's (ts, dur, name id) columns a block at a time, in order (see :func:`blocks`)."""
        return blocks(self.tails[key], self.spilled.get(key))

    def __getitem__(self, key: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ts, dur, ids = columns(self.tails[key], self.spilled.get(key))
        return ts, dur, ids

    def __contains__(self, key: object) -> bool:
        return key in self.tails  # Mapping's would read the columns (``self[key]``) to answer

    def __iter__(self) -> Iterator[tuple]:
        return iter(self.tails)

    def __len__(self) -> int:
        return len(self.tails)
