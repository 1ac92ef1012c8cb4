"""glibc's mmap threshold while a trace's analyses run, in a process the analysis owns.

Freed arrays of tens of MB leave holes in glibc's heap that still count as resident (a 3 GB trace
peaked 40-55 MB higher: docs/scale.md); with a 1 MiB mmap threshold each gets pages of its own,
given back when freed (32 MiB after, glibc's largest dynamic one); only for a trace of
``MMAP_FROM_GPU_EVENTS`` or more, where the holes add up. ``mallopt`` is process-wide and
ends glibc's own tuning, so it is used only where the process is ours (:func:`own_this_process`: the
``bridge-plugins`` command and the workers it forks), never in a user's session.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from contextlib import contextmanager

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
ANALYSIS_MMAP_BYTES = 1 << 20
"""While a trace's analyses run, arrays from 1 MiB up get pages of their own."""
MMAP_FROM_GPU_EVENTS = 1 << 19
"""GPU events kept by the collector from which the threshold is set (every mix's 3 GB trace has 1.3 M
or more). Below, glibc keeps its own: its heap's holes cost a few tens of MB at most there, and
reusing them took a default ``summary`` of a 263 MB trace (180 k GPU events) from 85.8 k page faults
to 54.6 k, ~2.4 us each here (docs/scale.md, "Peak RSS of one big trace")."""
BIG_TRACE_MMAP_BYTES = 1 << 18
"""From 256 KiB up for a trace of ``BIG_TRACE_GPU_EVENTS`` or more: at 1 MiB the 3 GB
``job128_rank1`` trace peaked at 251 MB (the heap's holes below it moved with what the command had
imported before: 243-251 MB for the same analyses), 242 MB at 256 KiB in the same time. Not below:
the 263 MB trace's analyses took 0.1 s more (mapping and zeroing its many arrays of 256 KiB-1 MiB)."""
BIG_TRACE_GPU_EVENTS = 1 << 20
"""GPU events kept by the collector from which a trace is big (about 1.5 GB of a GPU-heavy trace)."""
AFTER_MMAP_BYTES = 32 << 20
"""Afterwards: glibc's largest dynamic threshold."""
_owned = False


def own_this_process() -> None:
    """This process is the analysis's own (the command line's): its allocator may be tuned."""
    global _owned
    _owned = True


@contextmanager
def big_arrays_given_back(gpu_events: int = 0) -> Iterator[None]:
    """The analyses' big arrays in pages of their own, in a process we own with glibc's ``mallopt``,
    for a trace of ``gpu_events`` from ``MMAP_FROM_GPU_EVENTS`` (smaller ones too from
    ``BIG_TRACE_GPU_EVENTS``); elsewhere nothing changes."""
    mallopt = getattr(libc(), "mallopt", None) if _owned and gpu_events >= MMAP_FROM_GPU_EVENTS else None
    threshold = BIG_TRACE_MMAP_BYTES if gpu_events >= BIG_TRACE_GPU_EVENTS else ANALYSIS_MMAP_BYTES
    if mallopt is None or mallopt(M_MMAP_THRESHOLD, threshold) != 1:
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
