"""Where an allocation came from: its Python frames, reduced to one "site" to group by.

The site is the innermost frame in the user's code (frames are innermost first; PyTorch, the
standard library and builtins are skipped), so allocations group under the model line that
caused them (``model.py:31 forward``). :func:`frame_parts` reads both frame forms (real and
profiler-made snapshots: docs/formats.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_PROFILER_NAME = re.compile(r"^(?P<file>.+)\((?P<line>\d+)\): (?P<func>.+)$")
_LIBRARY_PATH = re.compile(
    r"(?:^|[/\\](?:site|dist)-packages[/\\])(?:torch|torchgen|functorch|triton)[/\\]"  # PyTorch (the profiler
    # shortens its paths to ``torch/...``)
    r"|[/\\]lib[/\\]python3(?:\.\d+)?[/\\](?!site-packages|dist-packages)"  # the standard library
)
NO_FRAMES = "<no Python frames>"


def frame_parts(frame: dict) -> tuple[str, int, str]:
    """(filename, line, function) of a snapshot frame, in either the allocator's or the profiler's form."""
    filename, line, name = str(frame.get("filename", "")), frame.get("line", 0), str(frame.get("name", ""))
    if filename in ("", "none") and not line:
        m = _PROFILER_NAME.match(name)
        if m:
            return m["file"], int(m["line"]), m["func"]
        return "", 0, name
    return filename, int(line or 0), name


def is_library(filename: str, function: str) -> bool:
    """PyTorch, the standard library, builtins and frozen modules: not where a user looks first."""
    return not filename or filename.startswith("<") or function.startswith("<") or bool(_LIBRARY_PATH.search(filename))


def short_path(filename: str) -> str:
    """The last two components of a path: enough to recognise a file, short enough for a table."""
    parts = re.split(r"[/\\]", filename)
    return "/".join(parts[-2:])


def site_of(frames: Iterable[dict] | None, category: str | None = None) -> str:
    """``file:line function`` of the innermost user frame (see the module docstring). Without
    frames, the profiler's category (``<parameter, no Python frames>``) keeps kinds apart."""
    parsed = [frame_parts(f) for f in frames or () if isinstance(f, dict)]
    if not parsed:
        return f"<{category}, no Python frames>" if category else NO_FRAMES
    chosen = next((p for p in parsed if not is_library(p[0], p[2])), parsed[0])
    filename, line, function = chosen
    return f"{short_path(filename)}:{line} {function}" if filename else function
