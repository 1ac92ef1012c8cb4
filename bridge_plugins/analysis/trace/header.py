"""The part of a Chrome trace before its events: the top-level keys up to ``"traceEvents": [``,
and, for a file that has no such list, a few words on what it is instead. Also the fast reader's
errors and the messages that say where in the (uncompressed) file a decode failed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import msgspec

from bridge_plugins.config.errors import BridgePluginsError

MAX_PIECE_BYTES = 16 << 20
GZIP_MAGIC = b"\x1f\x8b"
WS = b" \t\r\n"
_EVENTS_KEY = re.compile(rb'"traceEvents"[ \t\r\n]*:[ \t\r\n]*\[')
BYTE_AT = re.compile(r"\(byte (\d+)\)")
GENERIC = msgspec.json.Decoder()


class Unreadable(BridgePluginsError):
    """The file is not a readable trace: ``str(e)`` says what is wrong."""


class NotFast(BridgePluginsError):
    """This reader cannot place the header; the streaming reader can (and gives the right message)."""


def mib(n: int) -> str:
    return f"{n >> 20} MiB"


def decode_error(e: Exception, offset: int) -> str:
    """msgspec's message, with its position made a position in the (uncompressed) file."""
    msg = str(e).split(" - at ")[0]
    m = BYTE_AT.search(msg)
    if m:
        msg = msg[: m.start()] + f"(at byte {offset + int(m.group(1))})" + msg[m.end() :]
    return f"not valid JSON ({msg})"


def too_deep() -> str:
    return "JSON nested too deeply (the limit is about 1,000 levels; see docs/limits.md)"


def _describe_whole(doc: bytes) -> str:
    """What a small document with no ``"traceEvents": [`` is, in a few words."""
    if doc.startswith(GZIP_MAGIC):
        return "a gzip file inside a gzip file (compressed twice: gunzip it once)"
    if not doc.strip(WS):
        return "not valid JSON (the file is empty)"
    try:
        value = GENERIC.decode(doc)
    except RecursionError:
        return too_deep()
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        if "utf-8" in str(e).lower():
            raise NotFast from None
        return decode_error(e, 0)
    if not isinstance(value, dict):
        return "the top level is not a JSON object, so this is not a Chrome trace"
    return "no traceEvents list, so this is not a Chrome trace"


def header(blocks: Iterator[bytes]) -> tuple[dict, bytes, int]:
    """The top-level keys before ``traceEvents``, what was read after its ``[``, and that offset."""
    buf = b""
    for block in blocks:
        buf += block
        m = _EVENTS_KEY.search(buf)
        if m:
            break
        if len(buf) > MAX_PIECE_BYTES:
            if buf.startswith(GZIP_MAGIC):
                raise Unreadable(_describe_whole(buf[:2]))
            raise Unreadable(f"no traceEvents list in the first {mib(MAX_PIECE_BYTES)}, so this is not a Chrome trace")
    else:
        raise Unreadable(_describe_whole(buf))
    head = buf[: m.start()].strip(WS)
    if not head.startswith(b"{"):
        raise NotFast
    head = (head[:-1] if head.endswith(b",") else head) + b"}"
    try:
        try:
            header = GENERIC.decode(head)
        except msgspec.DecodeError as e:
            if "utf-8" not in str(e).lower():
                raise
            header = GENERIC.decode(head.decode("utf-8", errors="replace"))
    except RecursionError:
        raise Unreadable(too_deep()) from None
    except (msgspec.DecodeError, msgspec.ValidationError):
        raise NotFast from None  # e.g. "traceEvents" inside a string or inside another key
    if not isinstance(header, dict):
        raise NotFast
    return header, buf[m.end() :], m.end()
