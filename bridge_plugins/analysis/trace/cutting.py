"""Cutting ``traceEvents`` into chunks of whole events, each a small JSON array of its own, read
a block at a time into one buffer that lives as long as the file is read. How a boundary is found
and the limits: docs/limits.md ("How a trace is read").
"""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator
from typing import Protocol

import msgspec

from bridge_plugins.analysis.trace.header import (
    BYTE_AT,
    GENERIC,
    MAX_PIECE_BYTES,
    WS,
    Unreadable,
    decode_error,
    mib,
    too_deep,
)

BLOCK_BYTES = 1 << 20
_WS_BYTES = (b" ", b"\t", b"\r", b"\n")
# between two events: the next one starts with a key (a " that a string could only hold escaped) or is {}
_BOUNDARY = re.compile(rb'\}[ \t\r\n]*,[ \t\r\n]*(\{)[ \t\r\n]*["}]')
_CUT_TRIES = 8


class ByteStream(Protocol):
    """What the reader reads: a file, or a decompressing one (gzip's, ISA-L's)."""

    def read(self, size: int = -1, /) -> bytes: ...

    def readinto(self, buffer: memoryview, /) -> int: ...


def blocks(fh: ByteStream) -> Iterator[bytes]:
    while block := fh.read(BLOCK_BYTES):
        if block[:1] in _WS_BYTES and block[-1:] in _WS_BYTES and not block.strip(WS):
            block = b" "  # a block of padding (outside a string: inside one it is past the limit anyway)
        yield block


class _Unread:
    """The part of ``traceEvents`` read but not yet decoded, ``buf[lo:hi]`` (file offset ``offset`` at
    ``lo``), in one buffer that lives as long as the file is read: each block is read into it and
    each chunk is a view of it. A buffer of its own per block or chunk would be fresh memory every
    MB, and faulting in those pages cost more than copying them."""

    def __init__(self, rest: bytes, offset: int, fh: ByteStream) -> None:
        self.buf = bytearray(2 * BLOCK_BYTES + len(rest))
        self.lo, self.hi, self.offset, self.fh, self.eof = 1, 1 + len(rest), offset, fh, False  # buf[0]: room for "["
        self.buf[self.lo : self.hi] = rest

    def __len__(self) -> int:
        return self.hi - self.lo

    def read(self, want: int) -> None:
        """Read blocks until ``want`` bytes are unread or the file ends; a block of nothing but
        whitespace counts as one space (outside a string: inside one it is past the limit anyway)."""
        buf = self.buf
        while not self.eof and self.hi - self.lo < want:
            if self.hi + BLOCK_BYTES > len(buf):
                buf = self._make_room()
            got = self.fh.readinto(memoryview(buf)[self.hi : self.hi + BLOCK_BYTES])
            if not got:
                self.eof = True
                return
            end = self.hi + got
            if buf[self.hi] in WS and buf[end - 1] in WS and not buf[self.hi : end].strip(WS):
                end = self.hi + 1
                buf[self.hi] = 0x20
            self.hi = end

    def _make_room(self) -> bytearray:
        """Move the unread bytes to the front, and grow the buffer if they and a block do not fit."""
        n = self.hi - self.lo
        self.buf[1 : 1 + n] = self.buf[self.lo : self.hi]
        self.lo, self.hi = 1, 1 + n
        if self.hi + BLOCK_BYTES > len(self.buf):
            self.buf.extend(bytes(self.hi + BLOCK_BYTES))  # an event longer than a block: at most MAX_PIECE_BYTES
        return self.buf

    def consume(self, to: int) -> None:
        """The bytes before ``buf[to]`` are done."""
        self.offset += to - self.lo
        self.lo = to

    def rest(self) -> bytes:
        """``[`` and what is left, to the end of the file."""
        return b"[" + bytes(self.buf[self.lo : self.hi])


def chunks(
    rest: bytes, offset: int, fh: ByteStream
) -> Generator[tuple[bytes | bytearray | memoryview, int, bool], bool | None, None]:
    """(``[`` + whole events + ``]``, file offset of its first event, whether it is the last chunk).

    A chunk is a view of the buffer, valid until the next ``send``: the ``[`` is written over the
    byte before the first event and the ``]`` over the one after the last (both in a separator).
    When ``decode`` reports "truncated" (the cut fell inside a string or a nested list), the caller
    sends True into the generator: the next chunk is cut at an earlier boundary, and after a few
    such tries, at one in a longer piece of the file.
    """
    unread = _Unread(rest, offset, fh)
    while True:
        unread.read(BLOCK_BYTES)
        if unread.eof:
            yield _last_chunk(unread.rest(), unread.offset), unread.offset, True
            return
        buf, lo, hi = unread.buf, unread.lo, unread.hi
        k, tries = hi, 0
        while tries < _CUT_TRIES and (k := buf.rfind(b"}", lo, k)) >= 0:
            cut = _BOUNDARY.match(buf, k, hi)
            if cut is None:
                continue
            tries += 1
            separator = buf[k + 1]
            buf[lo - 1], buf[k + 1] = 0x5B, 0x5D  # "[" and "]"
            view = memoryview(buf)[lo - 1 : k + 2]
            try:
                extend = yield view, unread.offset, False
            finally:
                view.release()
                buf[k + 1] = separator
            if not extend:
                unread.consume(cut.start(1))
                break
        else:
            if len(unread) > MAX_PIECE_BYTES:
                raise Unreadable(
                    f"an event (or what follows the events) at byte {unread.offset} is larger than "
                    f"{mib(MAX_PIECE_BYTES)} (a huge string?), past the limit in docs/limits.md"
                )
            # read a block's worth of data before looking again: a block of padding adds one byte,
            # and a look costs a scan
            unread.read(len(unread) + BLOCK_BYTES)


def _last_chunk(chunk: bytes | bytearray, offset: int) -> bytes | bytearray:
    """The events left at the end of the file, as an array (``chunk`` is ``[`` + the rest of the
    file): msgspec decodes it and says where the array ends ("trailing characters"); what follows
    is not read."""
    try:
        GENERIC.decode(chunk)
        raise Unreadable("not valid JSON (the file ends right after traceEvents, without the closing })")
    except RecursionError:
        raise Unreadable(too_deep()) from None
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        msg = str(e)
        m = BYTE_AT.search(msg)
        if "trailing characters" in msg and m:
            return chunk[: int(m.group(1)) - 1]  # msgspec points one past the first trailing byte
        if "utf-8" in msg.lower():
            return _last_chunk(bytes(chunk).decode("utf-8", errors="replace").encode(), offset)
        if "truncated" not in msg.lower():
            raise Unreadable(decode_error(e, offset - 1)) from None
    raise Unreadable("not valid JSON (the file ends inside traceEvents: cut off while being written or copied?)")
