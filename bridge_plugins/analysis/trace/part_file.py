"""A range worker's part sent back through a memory file (a Linux memfd) that the reading process
made before forking it: the part's arrays written there once, the rest pickled small, so that the
reading process copies each array once, from the file's pages into its columns, rather than
unpickling ~12 MB that the pool's pipe carried (263 MB trace: ~30 ms of CPU on the two sides, most
of it while the reading process waits; and ~7 ms more when they were copied out of the file first).
Where there is no memfd, or writing it fails, the part goes through the pipe as before.
"""

from __future__ import annotations

import io
import mmap
import os
import pickle
from array import array
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where a part is read back: a range worker never imports numpy
    import numpy as np


def new_file() -> int:
    """A memory file for one worker's part (closed on exec); -1 where none can be made."""
    if not hasattr(os, "memfd_create"):  # pragma: no cover - not Linux
        return -1
    try:
        return os.memfd_create("bridge-plugins-part", os.MFD_CLOEXEC)
    except OSError:
        return -1


class _Writer(pickle.Pickler):
    """Pickles ``obj`` with each non-empty array's bytes written to the file ``fd`` instead."""

    def __init__(self, out: io.BytesIO, fd: int) -> None:
        super().__init__(out, protocol=pickle.HIGHEST_PROTOCOL)
        self.fd, self.at = fd, 0

    def persistent_id(self, obj: Any) -> tuple[str, int, int] | None:
        if type(obj) is not array or not len(obj):
            return None
        view = memoryview(obj).cast("B")
        at, done = self.at, 0
        while done < len(view):
            done += os.pwrite(self.fd, view[done:], at + done)
        self.at += len(view)
        return obj.typecode, at, len(view)


class _Reader(pickle.Unpickler):
    def __init__(self, data: bytes, mapped: mmap.mmap | None) -> None:
        super().__init__(io.BytesIO(data))
        self.mapped = mapped

    def persistent_load(self, pid: tuple[str, int, int]) -> np.ndarray:
        import numpy as np

        typecode, at, size = pid
        if self.mapped is None or at + size > len(self.mapped):
            raise OSError(f"the part's memory file ends before its array at byte {at} ({size} bytes)")
        dtype = np.dtype(typecode)
        return np.frombuffer(self.mapped, dtype=dtype, count=size // dtype.itemsize, offset=at)


def dumps(obj: Any, fd: int) -> bytes:
    """``obj`` pickled, its arrays' bytes written to ``fd`` (from offset 0). Raises OSError."""
    out = io.BytesIO()
    _Writer(out, fd).dump(obj)
    return out.getvalue()


def loads(data: bytes, fd: int) -> Any:
    """What :func:`dumps` was given, each array a read-only numpy view of ``fd``'s pages (the same
    bytes and type; merge.py copies them once, into the collector's columns): the file stays mapped
    until the last of them is gone. Raises OSError."""
    size = os.fstat(fd).st_size
    return _Reader(data, mmap.mmap(fd, size, access=mmap.ACCESS_READ) if size else None).load()
