"""Give freed numpy arrays' memory back to the system at once, so peak RSS is what is in use.

glibc's malloc serves a block of 128 KiB or more with its own mmap, unmapped when freed; but after
such a block is freed it raises that threshold (up to 32 MiB), and later arrays come from the heap,
whose freed space stays in the process. The analyzers make many short-lived arrays of a few MB
(a 1 GB trace's peak RSS was 245 MB, 217 MB with the threshold fixed; docs/scale.md). Setting the
threshold fixes it at its default (``mallopt(M_MMAP_THRESHOLD)``). Elsewhere (macOS, musl)
nothing is done.
"""

from __future__ import annotations

import ctypes

M_MMAP_THRESHOLD = -3  # glibc's malloc.h
MMAP_FROM_BYTES = 128 << 10  # glibc's default, kept from now on
_set = False


def return_freed_memory() -> None:
    """Fix malloc's mmap threshold for this process (and the ones it forks); once is enough."""
    global _set
    if _set:
        return
    _set = True
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library this process already uses
    except (OSError, AttributeError):  # no mallopt: not glibc
        return
    mallopt(ctypes.c_int(M_MMAP_THRESHOLD), ctypes.c_int(MMAP_FROM_BYTES))
