"""The file mechanics under the on-demand protocol: read a file anyone may have put there, publish
one that no reader sees half-written.

A request or progress file is read only if it is a small regular file (no symlink, no FIFO), and
every file is written under a hidden temporary name, then moved or linked into place, in a real
directory below output_dir (``own_dirs``). Why: docs/guarantees.md. Standard library only.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from bridge_plugins.jobdir.own_dirs import PathLike, real_dir_below
from bridge_plugins.jobdir.regular_file import NotARegularFile, open_regular

MAX_FILE_BYTES = 64 * 1024


class ProtocolError(ValueError):
    """A request or progress file that cannot be used; the message names the file and why."""


def read_json_file(path: PathLike) -> dict:
    """A small JSON object from a regular file that is not a symlink (``open_regular``, which also
    keeps a FIFO from blocking); the size is checked on the open file. ProtocolError otherwise."""
    path = Path(path)
    try:
        fh = open_regular(path, follow_symlinks=False)
    except NotARegularFile as e:
        reason = str(e)
        raise ProtocolError(
            f"{path} {reason}" if "symlink" in reason else f"{path} is not a regular file ({reason})"
        ) from None
    except OSError as e:
        raise ProtocolError(f"{path} cannot be opened ({e.strerror or e})") from None
    with fh:
        size = os.fstat(fh.fileno()).st_size
        if size > MAX_FILE_BYTES:
            raise ProtocolError(f"{path} is {size} bytes, more than the {MAX_FILE_BYTES} a request may have")
        raw = fh.read(MAX_FILE_BYTES + 1)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ProtocolError(f"{path} is not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise ProtocolError(f"{path} holds a JSON {type(data).__name__}, not an object")
    return data


def write_hidden_tmp(output_dir: PathLike, directory: Path, text: str, durable: bool) -> Path:
    """Write ``text`` to a new hidden file in ``directory`` (below ``output_dir``; readers skip hidden
    names); the caller moves or links it into place. ``durable`` fsyncs it first, for a file that
    must survive a crash."""
    real_dir_below(output_dir, directory)
    tmp = directory / f".tmp.{os.getpid()}.{time.monotonic_ns()}"
    try:
        with open(tmp, "x", encoding="utf-8") as f:
            f.write(text)
            if durable:
                f.flush()
                os.fsync(f.fileno())
    except BaseException:  # a full disk: leave nothing behind (this runs every poll)
        tmp.unlink(missing_ok=True)
        raise
    return tmp
