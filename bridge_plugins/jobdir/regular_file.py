"""Open a file to read only if it is a regular file: a FIFO or device named as a trace or snapshot
would block the read forever (or never end), so it is refused with a one-line reason instead.

Opened with O_NONBLOCK so that opening a FIFO with no writer returns at once; the check is on the
opened descriptor (fstat), so the file cannot be swapped between the check and the read. Symlinks
to regular files are followed: a reader has nothing to protect from them.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO


class NotARegularFile(Exception):
    """``str(e)`` is what the path is instead (the caller names the file)."""


def open_regular(path: str | Path) -> BinaryIO:
    """``path`` opened for binary reading; NotARegularFile if it is a directory, FIFO, device or socket."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise NotARegularFile("is a directory, not a file")
        if not stat.S_ISREG(mode):
            raise NotARegularFile("not a regular file (a FIFO, device or socket would never be read)")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")
