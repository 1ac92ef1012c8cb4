"""Columns of per-event numbers that move to an unnamed temporary file as they grow, so the memory a
trace takes does not grow with the trace (issue 18: under 250 MB for a 3 GB trace).

The collector appends to plain ``array.array`` columns (fast) and hands them to :meth:`Spill.write`
when they reach ``SPILL_AT`` elements; :meth:`Spill.read` gives back each column whole, as numpy,
when the figures are computed, one group (a thread's operators, say) at a time.
"""

from __future__ import annotations

import tempfile
from array import array

import numpy as np

SPILL_AT = 1 << 18  # elements per column kept in memory before they are written out


class Spill:
    """Blocks of a group of same-length columns, written in turn to one temporary file."""

    def __init__(self) -> None:
        # deleted when closed or when the process ends; it lives as long as the collected data
        self._file = tempfile.TemporaryFile()  # noqa: SIM115
        self._blocks: list[int] = []

    def write(self, columns: tuple[array, ...]) -> None:
        """Append the columns' contents to the file and empty them."""
        self._blocks.append(len(columns[0]))
        for c in columns:
            c.tofile(self._file)
            del c[:]

    def read(self, tail: tuple[array, ...]) -> list[np.ndarray]:
        """Every column whole: what was written, then what is still in ``tail``."""
        n = sum(self._blocks) + len(tail[0])
        out = [np.empty(n, dtype=np.dtype(c.typecode)) for c in tail]
        self._file.flush()
        self._file.seek(0)
        at = 0
        for size in self._blocks:
            for col in out:
                self._file.readinto(memoryview(col[at : at + size]).cast("B"))
            at += size
        for col, c in zip(out, tail, strict=True):
            col[at:] = np.frombuffer(c, dtype=col.dtype) if len(c) else col[at:at]
        return out

    def close(self) -> None:
        self._file.close()


def columns(tail: tuple[array, ...], spill: Spill | None) -> list[np.ndarray]:
    """The whole columns of a group: from ``spill`` if some were written out, else ``tail`` alone."""
    if spill is not None:
        return spill.read(tail)
    return [np.frombuffer(c, dtype=np.dtype(c.typecode)) if len(c) else np.zeros(0, np.dtype(c.typecode)) for c in tail]
