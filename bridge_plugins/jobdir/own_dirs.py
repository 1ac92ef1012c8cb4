"""The directories we create under ``output_dir`` are never a symlink someone planted there.

``output_dir`` may be shared and writable; a neighbour could plant ``torch_profile`` (or
``on_demand/requests``) as a symlink into a directory they control. :func:`real_dir_below`
creates each directory below it, or accepts it only if it is a real one, walking with directory
descriptors (``O_DIRECTORY | O_NOFOLLOW``). What is allowed, and the race that remains:
docs/guarantees.md. Standard library only: the trigger CLI and the job both use it.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import Union

from bridge_plugins.config.errors import BridgePluginsError

PathLike = Union[str, "os.PathLike[str]"]


class UnsafeDirectoryError(BridgePluginsError, OSError):
    """A directory we would write into (or read requests from) is a symlink or not a directory;
    the message names it and says why nothing goes through it."""


def real_dir_below(root: PathLike, directory: PathLike, create: bool = True) -> os.stat_result:
    """Make (``create``) or find ``directory``, refusing any component below ``root`` that is a
    symlink or not a directory; returns the directory's stat (its identity, for later checks).

    ``directory`` outside ``root`` (or with ``..`` below it) is taken as the user's own choice, like
    ``root``. Raises UnsafeDirectoryError naming the refused path; FileNotFoundError when missing
    and not ``create``; OSError for anything else (permissions, a full disk).
    """
    root, directory = Path(root), Path(directory)
    parts = _parts_below(root, directory)
    if parts is None:
        root, parts = directory, ()
    if create:
        root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        here = root
        for name in parts:
            here = here / name
            try:
                if create:
                    _mkdir_at(fd, name)
                below = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as e:  # named in full: relative to a descriptor, the error says only ``name``
                raise _refusal(here, fd, name) or type(e)(e.errno, e.strerror, str(here)) from None
            os.close(fd)
            fd = below
        return os.fstat(fd)
    finally:
        os.close(fd)


def _mkdir_at(parent_fd: int, name: str) -> None:
    # exists: ours from an earlier artifact, an earlier job's, or planted: the open decides
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, dir_fd=parent_fd)


def same_dir(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _parts_below(root: Path, directory: Path) -> tuple[str, ...] | None:
    try:
        parts = directory.relative_to(root).parts
    except ValueError:
        return None
    return None if ".." in parts else parts


def _refusal(path: Path, parent_fd: int, name: str) -> UnsafeDirectoryError | None:
    """Why ``name`` could not be opened as a directory, if it is a symlink or something else."""
    try:
        mode = os.lstat(name, dir_fd=parent_fd).st_mode
    except OSError:
        return None
    if stat.S_ISLNK(mode):
        return UnsafeDirectoryError(
            f"{path} is a symlink (planted?); profiling files are not written or read through it: remove it "
            f"(if you made it, set output_dir to where it points instead)"
        )
    if not stat.S_ISDIR(mode):
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a regular file" if stat.S_ISREG(mode) else "a special file"
        return UnsafeDirectoryError(f"{path} is not a directory ({kind}); remove it or choose another output_dir")
    return None
