"""Load a CUDA memory snapshot pickle without ever running code from it.

``torch.cuda.memory._dump_snapshot`` pickles a plain dict (lists, dicts, str, int, float, bool,
None, tuples). A pickle can name any importable callable and have it called while loading, so a
hostile or corrupt file must never reach ``pickle.load``. :class:`_DataOnlyUnpickler` refuses every
global lookup except the few builtin container types a pickle may need to rebuild plain data;
everything else raises :class:`SnapshotFormatError`, naming the file, before anything runs.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, NoReturn

from bridge_plugins.analysis.errors import AnalysisInputError
from bridge_plugins.analysis.memory.budget import BYTES_PER_FILE_BYTE, MIN_BUDGET, budget_for
from bridge_plugins.analysis.memory.pickle_scan import count_containers, crafted_at
from bridge_plugins.analysis.memory.shape import ShapeError, check_snapshot
from bridge_plugins.jobdir.regular_file import NotARegularFile, open_regular

_ALLOWED_GLOBALS = {
    # Older pickle protocols rebuild these containers through a global lookup (protocol >= 4 uses
    # opcodes; protocol 2 names Python 2's module, __builtin__). Calling them on already-loaded
    # data runs no code from the file.
    (module, name)
    for module in ("builtins", "__builtin__")
    for name in ("set", "frozenset", "bytearray")
}


class SnapshotFormatError(AnalysisInputError, ValueError):
    """The file is not a memory snapshot we can read; the message names the file and why."""


class _DataOnlyUnpickler(pickle.Unpickler):
    def __init__(self, file: IO[bytes] | _Watched, path: Path) -> None:
        super().__init__(file)
        self._path = path

    def find_class(self, module: str, name: str) -> type:
        if (module, name) in _ALLOWED_GLOBALS:
            return super().find_class(module, name)
        raise SnapshotFormatError(
            f"{self._path}: refusing to load: the pickle references {module}.{name}, which a CUDA memory "
            "snapshot never holds (loading it could run code)"
        )

    def persistent_load(self, pid: object) -> NoReturn:
        raise SnapshotFormatError(f"{self._path}: refusing to load: the pickle uses persistent ids (not a snapshot)")


def load_snapshot(path: str | Path) -> dict:
    """The snapshot dict in ``path`` (``segments``, ``device_traces``); SnapshotFormatError otherwise.

    A bare list of segments (the oldest snapshot format) is returned as ``{"segments": [...],
    "device_traces": []}``, as torch's own ``_memory_viz`` does.
    """
    path = Path(path)
    try:
        with open_regular(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            head = fh.read(8)
            if not head.startswith(b"\x80"):  # the PROTO opcode: torch writes pickle protocol 2 or later
                raise SnapshotFormatError(
                    f"{path}: not a CUDA memory snapshot (expected a pickle from torch.cuda.memory._dump_snapshot, "
                    f"the file starts with {head!r})"
                )
            _check_containers(fh, path, size)
            fh.seek(0)
            data = _unpickle(_Watched(fh, lambda: _check_crafted(fh, path)), path)
    except NotARegularFile as e:
        raise SnapshotFormatError(f"{path}: cannot read: {e}") from None
    except OSError as e:
        raise SnapshotFormatError(f"{path}: cannot read: {e.strerror or e}") from None
    if isinstance(data, list):
        data = {"segments": data, "device_traces": []}
    if not isinstance(data, dict) or not isinstance(data.get("segments"), list):
        kind = type(data).__name__
        raise SnapshotFormatError(
            f"{path}: not a CUDA memory snapshot (a pickled {kind} without a 'segments' list; expected the "
            "dict that torch.cuda.memory._dump_snapshot writes)"
        )
    traces = data.setdefault("device_traces", [])
    if not isinstance(traces, list) or not all(isinstance(t, list) for t in traces):
        raise SnapshotFormatError(f"{path}: not a CUDA memory snapshot ('device_traces' is not a list per device)")
    try:
        check_snapshot(data, size)
    except ShapeError as e:
        raise SnapshotFormatError(f"{path}: not a CUDA memory snapshot we can read: {e}") from None
    return data


def _check_containers(fh: IO[bytes], path: Path, size: int) -> None:
    """Refuse a file whose bytes alone can make more dicts and lists than its memory budget holds."""
    made = count_containers(fh)
    budget = budget_for(size)
    if made.least_bytes > budget:
        raise SnapshotFormatError(
            f"{path}: refused: its bytes can make up to {made.dicts:,} dicts and {made.lists:,} lists, which take "
            f"at least {made.least_bytes >> 20} MB once built, over its memory budget of {budget >> 20} MB "
            f"({BYTES_PER_FILE_BYTE}x its size, at least {MIN_BUDGET >> 20} MB)"
        )


def _check_crafted(fh: IO[bytes], path: Path) -> None:
    """Refuse a file that holds what pickle.dump never writes (``pickle_scan.crafted_at``)."""
    crafted = crafted_at(fh)
    if crafted is not None:
        raise SnapshotFormatError(
            f"{path}: not a CUDA memory snapshot: {crafted.what} (pickle.dump, which torch uses, fills "
            "containers in batches of 1,000, a smaller one only last)"
        )


WATCH_FLOOR = 64 << 20
WATCH_RATIO = 10


def _resident() -> int | None:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


class _Watched:
    """``fh`` as the unpickler reads it (every few KB): once the process has grown by more than
    WATCH_FLOOR and WATCH_RATIO bytes per byte read, ``check`` runs, once. Loading a snapshot torch
    wrote grows by at most 8 bytes per byte; the opcode scan it starts costs half a load's time."""

    def __init__(self, fh: IO[bytes], check: Callable[[], None]) -> None:
        self._fh, self._check = fh, check
        self._start = _resident()

    def _watch(self) -> None:
        if self._start is None:
            return
        grown = (_resident() or 0) - self._start
        if grown > WATCH_FLOOR and grown > WATCH_RATIO * self._fh.tell():
            self._start = None
            self._check()

    def read(self, n: int = -1) -> bytes:
        self._watch()
        return self._fh.read(n)

    def readinto(self, buf: bytearray) -> int:
        self._watch()
        return self._fh.readinto(buf)  # type: ignore[attr-defined]

    def readline(self) -> bytes:
        return self._fh.readline()

    def peek(self, n: int = 0) -> bytes:
        self._watch()
        return self._fh.peek(n)  # type: ignore[attr-defined]


def _unpickle(fh: IO[bytes] | _Watched, path: Path) -> Any:
    """The pickle in ``fh``, read straight from the file (no copy of it in memory)."""
    try:
        return _DataOnlyUnpickler(fh, path).load()
    except (SnapshotFormatError, MemoryError):
        raise
    except Exception as e:  # truncated or corrupt pickles raise many types
        raise SnapshotFormatError(f"{path}: not a readable pickle ({type(e).__name__}: {e})") from None
