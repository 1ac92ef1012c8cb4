"""The one safe open for reading: a regular file only, never a FIFO or device that would block
the read forever, with a one-line reason otherwise (readers and the on-demand protocol use it).

Opened with O_NONBLOCK so that opening a FIFO with no writer returns at once; the check is on the
opened descriptor (fstat), so the file cannot be swapped between the check and the read. Symlinks
are followed unless the caller reads files anyone may have planted (``follow_symlinks=False``).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from bridge_plugins.config.errors import BridgePluginsError


class NotARegularFile(BridgePluginsError):
    """``str(e)`` is what the path is instead (the caller names the file)."""


def open_regular(path: str | Path, follow_symlinks: bool = True) -> BinaryIO:
    """``path`` opened for binary reading; NotARegularFile if it is a directory, FIFO, device or
    socket, or (``follow_symlinks=False``, for files anyone may have planted) a symlink."""
    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if follow_symlinks else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        if e.errno == errno.ELOOP and not follow_symlinks:
            raise NotARegularFile("is a symlink; only regular files are read") from None
        raise
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
