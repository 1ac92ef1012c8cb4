"""Reading the on-demand protocol's files: a file anyone may have put there is read only if it is
a small regular file (no symlink, no FIFO) holding a JSON object.

They are written with the one atomic write (``atomic_write``), in a real directory below output_dir
(``own_dirs``). Why: docs/guarantees.md. Standard library only.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from bridge_plugins.config.errors import BridgePluginsError
from bridge_plugins.jobdir.own_dirs import PathLike
from bridge_plugins.jobdir.regular_file import NotARegularFile, open_regular

MAX_FILE_BYTES = 64 * 1024


class ProtocolError(BridgePluginsError, ValueError):
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
