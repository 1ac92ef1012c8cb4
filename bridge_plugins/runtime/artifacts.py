"""Artifact naming and writing: atomic, never overwriting, one log line each.

Every file a backend produces is first written to a hidden temporary file in the target
directory, then published under its final name with ``os.link``, which fails instead of
replacing an existing file. So a reader never sees a truncated file under a final name, a crash
mid-write leaves only a ``.tmp`` file, and a restarted job (or a second task that was given the
same name) gets ``<name>.1<suffix>`` instead of destroying an earlier attempt's profile.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Callable, List

from bridge_plugins.artifact_names import TORCH_TRACE_DIR, TORCH_TRACE_SUFFIX, restart_tag, split_suffix  # noqa: F401 (re-exported)

log = logging.getLogger("bridge_plugins")

class ArtifactWriter:
    """Writes files atomically without overwriting and keeps the list of what was written."""

    def __init__(self) -> None:
        self.paths: List[Path] = []

    def write(self, what: str, directory: Path, stem: str, suffix: str, produce: Callable[[str], None]) -> Path:
        """Call ``produce(tmp_path)`` to fill a temporary file, then publish it as ``stem+suffix``.

        Returns the final path. Raises whatever ``produce`` or the file system raised, after
        removing the temporary file; the caller decides whether that is fatal (it never is for
        profiling: see ProfilingController).
        """
        t0 = time.perf_counter()
        directory.mkdir(parents=True, exist_ok=True)
        tmp = directory / f".{stem}.{os.getpid()}.tmp{suffix}"
        try:
            produce(str(tmp))
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            final = _publish(tmp, directory, stem, suffix)
        finally:
            if tmp.exists():
                tmp.unlink()
        size = final.stat().st_size
        self.paths.append(final)
        log.info("wrote %s %s (%s) in %.2f s", what, final, human_size(size), time.perf_counter() - t0)
        return final


def _publish(tmp: Path, directory: Path, stem: str, suffix: str) -> Path:
    for n in range(10_000):
        final = directory / (f"{stem}{suffix}" if n == 0 else f"{stem}.{n}{suffix}")
        try:
            os.link(tmp, final)
            return final
        except FileExistsError:
            continue
        except OSError:
            # File systems without hard links: rename is atomic but may replace, so check first.
            if final.exists():
                continue
            os.replace(tmp, final)
            return final
    raise FileExistsError(f"no free name for {stem}{suffix} in {directory}")


def human_size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
