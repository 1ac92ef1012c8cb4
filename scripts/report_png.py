"""Stamp docs/report.png with the sections of the report it shows, so a test can tell it is stale.

    python scripts/report_png.py REPORT.html IMAGE.png   # scripts/report_screenshot.sh runs this

The sections are the report's navigation bar (Findings, Steps, Timelines, ...), in order, kept in
a PNG ``tEXt`` chunk; tests/docs/test_report_png.py builds the same report and compares. Standard
library only.
"""

from __future__ import annotations

import re
import struct
import sys
import zlib
from html import unescape
from pathlib import Path

KEY = b"bridge-plugins report sections"
SIGNATURE = b"\x89PNG\r\n\x1a\n"


def report_sections(html: str) -> list[str]:
    """The section names of a report's navigation bar, in order."""
    nav = re.search(r"<nav>(.*?)</nav>", html, re.S)
    if nav is None:
        raise ValueError("no <nav> in the report")
    return [unescape(name) for name in re.findall(r"<a [^>]*>(.*?)</a>", nav.group(1))]


def _chunks(data: bytes):
    if not data.startswith(SIGNATURE):
        raise ValueError("not a PNG")
    at = len(SIGNATURE)
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        yield at, data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        at += 12 + length


def stamped_sections(png: Path) -> list[str] | None:
    """The sections stamped into ``png``, or None if it carries no stamp."""
    for _, kind, body in _chunks(png.read_bytes()):
        if kind == b"tEXt" and body.startswith(KEY + b"\0"):
            return body[len(KEY) + 1 :].decode("latin-1").split("|")
    return None


def stamp(png: Path, sections: list[str]) -> None:
    """Write ``sections`` into ``png`` (replacing an earlier stamp), after its header chunk."""
    data = png.read_bytes()
    kept = [data[at : at + 12 + len(body)] for at, kind, body in _chunks(data)]
    kept = [c for c in kept if not (c[4:8] == b"tEXt" and c[8:].startswith(KEY + b"\0"))]
    body = KEY + b"\0" + "|".join(sections).encode("latin-1")
    chunk = struct.pack(">I", len(body)) + b"tEXt" + body + struct.pack(">I", zlib.crc32(b"tEXt" + body))
    png.write_bytes(SIGNATURE + kept[0] + chunk + b"".join(kept[1:]))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python scripts/report_png.py REPORT.html IMAGE.png")
    names = report_sections(Path(sys.argv[1]).read_text(encoding="utf-8"))
    stamp(Path(sys.argv[2]), names)
    print(f"{sys.argv[2]}: stamped with the report's sections: {', '.join(names)}")
