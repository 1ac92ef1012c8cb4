"""glibc's mmap threshold while a trace's analyses run, in a process the analysis owns.

Freed arrays of tens of MB leave holes in glibc's heap that still count as resident (a 3 GB trace
peaked 40-55 MB higher: docs/scale.md); with a 256 KiB mmap threshold each gets pages of its own,
given back when freed (32 MiB after, glibc's largest dynamic one). ``mallopt`` is process-wide and
ends glibc's own tuning, so it is used only where the process is ours (:func:`own_this_process`: the
``bridge-plugins`` command and the workers it forks), never in a user's session.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from contextlib import contextmanager

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
ANALYSIS_MMAP_BYTES = 1 << 18
"""While a trace's analyses run, arrays from 256 KiB up get pages of their own. 1 MiB left the 3 GB
``job128_rank1`` trace at 251 MB (its heap's holes below 1 MiB, which moved with what the command
had imported before: 244-251 MB for the same analyses); 256 KiB: 242 MB, in the same time."""
AFTER_MMAP_BYTES = 32 << 20
"""Afterwards: glibc's largest dynamic threshold."""
_owned = False


def own_this_process() -> None:
    """This process is the analysis's own (the command line's): its allocator may be tuned."""
    global _owned
    _owned = True


@contextmanager
def big_arrays_given_back() -> Iterator[None]:
    """The analyses' big arrays in pages of their own, in a process we own with glibc's ``mallopt``;
    elsewhere nothing changes."""
    mallopt = getattr(libc(), "mallopt", None) if _owned else None
    if mallopt is None or mallopt(M_MMAP_THRESHOLD, ANALYSIS_MMAP_BYTES) != 1:
        yield
        return
    try:
        yield
    finally:
        mallopt(M_MMAP_THRESHOLD, AFTER_MMAP_BYTES)


def libc() -> object:
    """The C library of this process (glibc's ``mallopt``, ``prctl``), or None."""
    try:
        return ctypes.CDLL(None)
    except OSError:
        return None
