"""Checks that a file is complete before it is published, and the gzip step we control.

Why: torch writes traces from C++ and does not raise when a write fails (a full disk, a file size
limit): the file just stops. A check of the file's end catches that, because both writers end
their JSON with a fixed footer that a truncated file cannot have. Full JSON parsing is not used:
a GPU trace can be gigabytes and would need several times that in memory.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import resource
import zlib

KINETO_FOOTER = re.compile(rb'\]\s*,\s*"traceName"\s*:\s*"[^"]*"\s*\}\s*$')
"""How torch.profiler's Chrome trace JSON ends: the traceEvents list, then its traceName."""
EXECUTION_TRACE_FOOTER = re.compile(rb'\]\s*,\s*"finish_ts"\s*:\s*\d+\s*\}\s*$')
"""How torch.profiler.ExecutionTraceObserver's JSON ends: the nodes list, then finish_ts."""
_CHUNK = 1 << 20


def check_json_complete(path: str, footer: re.Pattern[bytes]) -> None:
    """Raise ValueError unless ``path`` starts a JSON object and ends with ``footer``."""
    if not os.path.isfile(path):
        raise ValueError(f"the profiler wrote no file: {write_failure_cause(path, 0)}")
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(64).lstrip()
        f.seek(max(0, size - 4096))
        tail = f.read()
    if not head.startswith(b"{") or not footer.search(tail):
        raise ValueError(
            f"the profiler wrote an incomplete file ({size} bytes, no closing footer): {write_failure_cause(path, size)}"
        )


LOW_SPACE = 1 << 20
"""Free bytes under which a failed write is put down to a full disk."""


def write_failure_cause(path: str, size: int) -> str:
    """Why a writer that does not report errors (torch's) left ``path`` missing or short, as far as
    the file system says: a file size limit it reached, a (nearly) full disk, or unknown."""
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft != resource.RLIM_INFINITY and size >= soft - _CHUNK:
        return f"the file size limit (ulimit -f, {soft} bytes) was hit"
    try:
        st = os.statvfs(os.path.dirname(path) or ".")
    except OSError:
        return "the cause is unknown (the directory cannot be examined)"
    free = st.f_bavail * st.f_frsize
    if free < LOW_SPACE or (st.f_files and st.f_favail == 0):
        return f"its disk is full ({free} bytes free)"
    return f"the cause is unknown: the disk has {free} bytes free and no file size limit was reached"


def check_kineto_header(path: str, limit: int = 64 << 20) -> None:
    """Raise ValueError unless the part of a Chrome trace before ``"traceEvents"`` parses as JSON.

    That part holds the metadata (``distributedInfo``, ours, ``deviceProperties``), which kineto
    copies in verbatim except for turning backslashes into '/': a bad value there once broke whole
    traces while the footer check passed. The events themselves are kineto's own output.
    """
    marker = b'"traceEvents"'
    head = b""
    with open(path, "rb") as f:
        while marker not in head and len(head) < limit:
            chunk = f.read(_CHUNK)
            if not chunk:
                break
            head += chunk
    at = head.find(marker)
    if at < 0:
        raise ValueError("the profiler wrote a trace without a traceEvents list")
    try:
        json.loads(head[:at].decode("utf-8") + '"traceEvents": []}')
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"the trace's metadata is not valid JSON ({e}); it was not published") from e


def gzip_file(src: str, dst: str) -> None:
    """Compress ``src`` into a new file ``dst`` (created exclusively, never through a link)."""
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with open(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6) as out, open(src, "rb") as fin:
        while chunk := fin.read(_CHUNK):
            out.write(chunk)


def check_gzip_complete(path: str) -> None:
    """Read the whole gzip stream back: raises on a truncated stream or a CRC mismatch."""
    try:
        with gzip.open(path, "rb") as f:
            while f.read(_CHUNK):
                pass
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise ValueError(f"the compressed trace is incomplete ({type(e).__name__}: {e})") from e
