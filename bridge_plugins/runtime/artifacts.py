"""Artifact writing: staged privately, checked, published atomically, never overwriting.

Each file is made in a fresh private staging directory beside its target, checked complete
(``verify``), fsynced and published with ``os.link``, which never replaces anything (the one atomic
write, ``jobdir.atomic_write``): a reader never sees a truncated file, and a restarted job gets
``<name>.1<suffix>``. The target
directory must be a real one (``own_dirs``). Why and against whom: docs/guarantees.md.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bridge_plugins.config.errors import BridgePluginsError
from bridge_plugins.jobdir.atomic_write import NotWrittenWhole, StagedFile
from bridge_plugins.jobdir.own_dirs import UnsafeDirectoryError, real_dir_below, same_dir

log = logging.getLogger("bridge_plugins")


class ArtifactError(BridgePluginsError, OSError):
    """Writing an artifact failed; the message names the file that was not written and why."""


class ArtifactWriter:
    """Writes artifacts safely and keeps the list of what was written."""

    def __init__(self, root: Path | None = None) -> None:
        self.paths: list[Path] = []
        self.root = root
        """The user's output_dir (set at controller entry): the directories we make below it must be
        real ones (``own_dirs``). None: every target directory is taken as the user's own choice."""

    def stage(self, what: str, directory: Path, stem: str, suffix: str) -> StagedFile:
        """Create the target directory if needed and a private staging directory inside it."""
        with _errors(what, directory / f"{stem}{suffix}"):
            checked = self._real_dir(directory)
            staged = StagedFile(directory, stem, suffix)
            _check_inside(staged, checked)
            return staged

    def _real_dir(self, directory: Path, create: bool = True) -> os.stat_result:
        return real_dir_below(self.root or directory, directory, create)

    def write(
        self,
        what: str,
        directory: Path,
        stem: str,
        suffix: str,
        produce: Callable[[str], None],
        check: Callable[[str], None] | None = None,
    ) -> Path:
        """Call ``produce(path)`` to make the file at a staging path, ``check(path)`` it, and
        publish it as ``<directory>/<stem><suffix>`` (or ``<stem>.<k><suffix>`` when taken).

        Returns the final path. Raises ArtifactError naming the final path when anything failed;
        then nothing was published. The caller decides whether that is fatal (it never is for
        profiling: see ProfilingController).
        """
        return self.publish(what, self.stage(what, directory, stem, suffix), directory, stem, suffix, produce, check)

    def publish(
        self,
        what: str,
        staged: StagedFile,
        directory: Path,
        stem: str,
        suffix: str,
        produce: Callable[[str], None],
        check: Callable[[str], None] | None = None,
    ) -> Path:
        """Like ``write``, for a staging directory made earlier with ``stage`` (a backend that
        records into it over the window); the staging directory is removed in every case."""
        t0 = time.perf_counter()
        with staged, _errors(what, directory / f"{stem}{suffix}"):
            produce(str(staged.path))
            staged.regular_stat()  # before check() reads it: never follow what the producer left
            if check is not None:
                check(str(staged.path))
            _check_inside(staged, self._real_dir(directory, create=False))  # not swapped meanwhile
            names = (directory / (f"{stem}{suffix}" if n == 0 else f"{stem}.{n}{suffix}") for n in range(10_000))
            try:
                final = staged.publish(names)  # fsynced, linked to a free name: never replaces
            except FileExistsError:
                raise ArtifactError(f"no free name for {stem}{suffix} in {directory}") from None
        size = os.lstat(final).st_size
        self.paths.append(final)
        log.info("wrote %s %s (%s) in %.2f s", what, final, human_size(size), time.perf_counter() - t0)
        return final


def _check_inside(staged: StagedFile, checked: os.stat_result) -> None:
    """The staging directory is in the directory just checked: not swapped for a symlink meanwhile."""
    if not same_dir(os.stat(staged.staging / ".."), checked):
        staged.discard()
        raise UnsafeDirectoryError(f"{staged.staging.parent} was replaced while in use (a symlink swapped in?)")


@contextmanager
def _errors(what: str, final: Path) -> Iterator[None]:
    """Name the file in every failure (a full disk says only 'No space left on device')."""
    try:
        yield
    except (ArtifactError, UnsafeDirectoryError, NotWrittenWhole) as e:
        raise ArtifactError(f"{what} {final} was not written: {e}") from e
    except Exception as e:
        raise ArtifactError(f"{what} {final} was not written: {type(e).__name__}: {e}") from e
    except BaseException as e:  # KeyboardInterrupt, SystemExit: say what is lost, then let it go on
        log.error("%s %s was not written: interrupted by %s", what, final, type(e).__name__)
        raise


def human_size(n: float) -> str:
    """Binary units, as the readers print sizes (``12.5 KiB``): one file, one figure, everywhere."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
