"""The one atomic write: a file that readers see whole or not at all (artifacts, on-demand files, report).

The file is made inside a fresh private staging directory beside its target (``mkdtemp``: mode
0700, a hidden name that readers skip), so nothing another user planted is followed or opened. It
is fsynced (``durable``), published in one step (``os.replace`` where replacing is meant, else
``os.link``, which never replaces nor follows a planted link), then its directory is fsynced, so
the name too survives a crash. The staging directory is removed in every case. Standard library only.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

from bridge_plugins.config.errors import BridgePluginsError


class NotWrittenWhole(BridgePluginsError, OSError):
    """What was made or published is not the regular file that was written; ``str(e)`` says which path and why."""


class StagedFile:
    """A file made at ``path`` (in a private staging directory in ``directory``), then ``publish``-ed.

    Use as a context manager: leaving it removes the staging directory, published or not."""

    def __init__(self, directory: str | os.PathLike[str], stem: str, suffix: str = "") -> None:
        self.directory = Path(directory)
        self.staging = Path(tempfile.mkdtemp(prefix=f".{stem}.", suffix=".tmp", dir=self.directory))
        self.path = self.staging / f".partial{suffix}"
        """Where the producer writes; ``suffix`` kept, since a writer may choose its format by it (``.gz``)."""

    def write_text(self, text: str) -> None:
        with open(self.path, "x", encoding="utf-8") as f:  # O_EXCL, in a directory only we can write
            f.write(text)

    def regular_stat(self) -> os.stat_result:
        """The staged file's stat; NotWrittenWhole if it is not a regular file (a link, a directory)."""
        st = os.lstat(self.path)
        if not stat.S_ISREG(st.st_mode):
            raise NotWrittenWhole(f"{self.path} is not a regular file")
        return st

    def publish(self, names: Iterable[Path], replace: bool = False, durable: bool = True) -> Path:
        """Publish the file under the first of ``names`` that is free (``replace``: under the first
        name, replacing what is there) and return that name. FileExistsError when every name is taken;
        NotWrittenWhole when the staged file is not a regular file or the name then holds another file."""
        st = self.regular_stat()
        if durable:
            _fsync(self.path, os.O_NOFOLLOW)  # the data, before any name points at it
        if replace:
            final = next(iter(names))
            os.replace(self.path, final)
        else:
            final = _link_to_free_name(self.path, names)
        got = os.lstat(final)
        if not stat.S_ISREG(got.st_mode) or (got.st_dev, got.st_ino) != (st.st_dev, st.st_ino):
            raise NotWrittenWhole(f"{final} is not the file that was written (replaced while publishing)")
        if durable:
            _fsync_directory(final.parent)  # the name itself: without it a crash may lose the entry
        return final

    def discard(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)

    def __enter__(self) -> StagedFile:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.discard()


def _fsync(path: Path, flags: int) -> None:
    fd = os.open(path, os.O_RDONLY | flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_directory(directory: Path) -> None:
    """fsync a directory's entries; a file system that cannot fsync a directory (EINVAL: some FUSE
    and network file systems) has published the name as durably as it can, which is no error."""
    try:
        _fsync(directory, os.O_DIRECTORY)
    except OSError as e:
        if e.errno != errno.EINVAL:
            raise


def _link_to_free_name(tmp: Path, names: Iterable[Path]) -> Path:
    taken: Path | None = None
    for final in names:
        try:
            os.link(tmp, final, follow_symlinks=False)  # never replaces, never follows a planted link
            return final
        except FileExistsError:
            taken = final
        except OSError:
            # a file system without hard links: rename is atomic but may replace, so check first
            # (lexists: a dangling symlink counts as taken)
            if os.path.lexists(final):
                taken = final
                continue
            os.rename(tmp, final)
            return final
    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(taken))


def write_text_atomically(
    target: Path, text: str, replace: bool, durable: bool = True, mode: int | None = None
) -> Path:
    """Write ``text`` as ``target`` in one step (see the module); ``replace=False`` never replaces an
    existing ``target`` (FileExistsError). ``mode``: the file's permissions (else the umask's)."""
    target = Path(target)
    with StagedFile(target.parent, target.name) as staged:
        staged.write_text(text)
        if mode is not None:
            os.chmod(staged.path, mode)
        return staged.publish([target], replace=replace, durable=durable)
