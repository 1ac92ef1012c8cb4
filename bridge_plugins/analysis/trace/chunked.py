"""The fast trace reader: decompress with ISA-L, cut ``traceEvents`` into chunks of whole events, and
decode each chunk with msgspec, never holding more than a few MB of the file.

Why chunks: msgspec decodes a whole document at C speed but needs it all in memory; a chunk that
ends on an event boundary is a small JSON array of its own. How a boundary is found, the limits
(``MAX_PIECE_BYTES``, nesting, whitespace) and the errors (:class:`Unreadable`, :class:`NotFast`
for the streaming reader): docs/limits.md ("How a trace is read").
"""

from __future__ import annotations

import gzip
import os
import re
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from types import GenericAlias
from typing import Any, BinaryIO, Protocol, cast

import msgspec

from bridge_plugins.config.errors import BridgePluginsError

try:  # ISA-L's gzip is ~3x faster than zlib's, and can decompress in a thread of its own
    from isal import igzip_threaded
except ImportError:  # pragma: no cover - isal ships wheels for every platform we run on
    igzip_threaded = None  # type: ignore[assignment]

THREADED_GZIP = 0 if os.environ.get("BRIDGE_PLUGINS_GZIP_THREAD") == "0" else 1
BLOCK_BYTES = 1 << 20
MAX_PIECE_BYTES = 16 << 20
GZIP_MAGIC = b"\x1f\x8b"
_WS = b" \t\r\n"
_WS_BYTES = (b" ", b"\t", b"\r", b"\n")
_EVENTS_KEY = re.compile(rb'"traceEvents"[ \t\r\n]*:[ \t\r\n]*\[')
# between two events: the next one starts with a key (a " that a string could only hold escaped) or is {}
_BOUNDARY = re.compile(rb'\}[ \t\r\n]*,[ \t\r\n]*(\{)[ \t\r\n]*["}]')
_CUT_TRIES = 8
_BYTE_AT = re.compile(r"\(byte (\d+)\)")
_generic = msgspec.json.Decoder()


class ByteStream(Protocol):
    """What the reader reads: a file, or a decompressing one (gzip's, ISA-L's)."""

    def read(self, size: int = -1, /) -> bytes: ...

    def readinto(self, buffer: memoryview, /) -> int: ...


class Unreadable(BridgePluginsError):
    """The file is not a readable trace: ``str(e)`` says what is wrong."""


class NotFast(BridgePluginsError):
    """This reader cannot place the header; the streaming reader can (and gives the right message)."""


@contextmanager
def open_stream(raw: BinaryIO, gzipped: bool) -> Iterator[ByteStream]:
    """``raw`` (a binary file), decompressed if ``gzipped`` (the file name says so): by ISA-L in a
    second thread, which overlaps decompressing the next MB with decoding this one. Closed on the
    way out, error or not: left to the garbage collector (a traceback can hold it in a cycle),
    ISA-L's reader joins its thread wherever the collector happens to run, once inside another
    thread's start, where threading's shutdown lock is held and the join waits for it forever."""
    if not gzipped:
        yield cast(ByteStream, raw)  # a buffered file (open_regular), which has readinto; its opener closes it
        return
    magic = raw.read(2)
    raw.seek(0)
    if magic != GZIP_MAGIC:
        raise Unreadable(f"not a gzip file (it starts with {magic!r}, not {GZIP_MAGIC!r})")
    if igzip_threaded is None:
        fh: Any = gzip.GzipFile(fileobj=raw, mode="rb")
    else:
        fh = igzip_threaded.open(raw, "rb", threads=THREADED_GZIP)
    with fh:
        yield fh


def _blocks(fh: ByteStream) -> Iterator[bytes]:
    while block := fh.read(BLOCK_BYTES):
        if block[:1] in _WS_BYTES and block[-1:] in _WS_BYTES and not block.strip(_WS):
            block = b" "  # a block of padding (outside a string: inside one it is past the limit anyway)
        yield block


def _mib(n: int) -> str:
    return f"{n >> 20} MiB"


def _decode_error(e: Exception, offset: int) -> str:
    """msgspec's message, with its position made a position in the (uncompressed) file."""
    msg = str(e).split(" - at ")[0]
    m = _BYTE_AT.search(msg)
    if m:
        msg = msg[: m.start()] + f"(at byte {offset + int(m.group(1))})" + msg[m.end() :]
    return f"not valid JSON ({msg})"


def _too_deep() -> str:
    return "JSON nested too deeply (the limit is about 1,000 levels; see docs/limits.md)"


def _describe_whole(doc: bytes) -> str:
    """What a small document with no ``"traceEvents": [`` is, in a few words."""
    if doc.startswith(GZIP_MAGIC):
        return "a gzip file inside a gzip file (compressed twice: gunzip it once)"
    if not doc.strip(_WS):
        return "not valid JSON (the file is empty)"
    try:
        value = _generic.decode(doc)
    except RecursionError:
        return _too_deep()
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        if "utf-8" in str(e).lower():
            raise NotFast from None
        return _decode_error(e, 0)
    if not isinstance(value, dict):
        return "the top level is not a JSON object, so this is not a Chrome trace"
    return "no traceEvents list, so this is not a Chrome trace"


def _header(blocks: Iterator[bytes]) -> tuple[dict, bytes, int]:
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
            raise Unreadable(f"no traceEvents list in the first {_mib(MAX_PIECE_BYTES)}, so this is not a Chrome trace")
    else:
        raise Unreadable(_describe_whole(buf))
    head = buf[: m.start()].strip(_WS)
    if not head.startswith(b"{"):
        raise NotFast
    head = (head[:-1] if head.endswith(b",") else head) + b"}"
    try:
        try:
            header = _generic.decode(head)
        except msgspec.DecodeError as e:
            if "utf-8" not in str(e).lower():
                raise
            header = _generic.decode(head.decode("utf-8", errors="replace"))
    except RecursionError:
        raise Unreadable(_too_deep()) from None
    except (msgspec.DecodeError, msgspec.ValidationError):
        raise NotFast from None  # e.g. "traceEvents" inside a string or inside another key
    if not isinstance(header, dict):
        raise NotFast
    return header, buf[m.end() :], m.end()


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
            if buf[self.hi] in _WS and buf[end - 1] in _WS and not buf[self.hi : end].strip(_WS):
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


def _chunks(
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
                    f"{_mib(MAX_PIECE_BYTES)} (a huge string?), past the limit in docs/limits.md"
                )
            # read a block's worth of data before looking again: a block of padding adds one byte,
            # and a look costs a scan
            unread.read(len(unread) + BLOCK_BYTES)


def _last_chunk(chunk: bytes | bytearray, offset: int) -> bytes | bytearray:
    """The events left at the end of the file, as an array (``chunk`` is ``[`` + the rest of the
    file): msgspec decodes it and says where the array ends ("trailing characters"); what follows
    is not read."""
    try:
        _generic.decode(chunk)
        raise Unreadable("not valid JSON (the file ends right after traceEvents, without the closing })")
    except RecursionError:
        raise Unreadable(_too_deep()) from None
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        msg = str(e)
        m = _BYTE_AT.search(msg)
        if "trailing characters" in msg and m:
            return chunk[: int(m.group(1)) - 1]  # msgspec points one past the first trailing byte
        if "utf-8" in msg.lower():
            return _last_chunk(bytes(chunk).decode("utf-8", errors="replace").encode(), offset)
        if "truncated" not in msg.lower():
            raise Unreadable(_decode_error(e, offset - 1)) from None
    raise Unreadable("not valid JSON (the file ends inside traceEvents: cut off while being written or copied?)")


def _decode(chunk: bytes | bytearray | memoryview, typed: msgspec.json.Decoder | None) -> tuple[bool, list[Any]]:
    """(True, records) or (False, the JSON values: dicts where they are events); raises msgspec's
    errors as they come."""
    if typed is not None:
        try:
            return True, typed.decode(chunk)
        except msgspec.ValidationError:
            pass  # an unexpected type somewhere: the general path reads this chunk
    return False, _generic.decode(chunk)


class Truncated(BridgePluginsError):
    """The chunk ends inside a string or a nested list: its cut was not between two events."""


def decode_chunk(
    chunk: bytes | bytearray | memoryview, typed: msgspec.json.Decoder | None, at: int, last: bool
) -> tuple[bool, list[Any]]:
    """``_decode`` of one chunk (file offset ``at``), with a stray invalid UTF-8 byte replaced
    rather than fatal. Raises Truncated (cut again: not for the last chunk) or Unreadable."""
    try:
        try:
            return _decode(chunk, typed)
        except msgspec.DecodeError as e:
            if "utf-8" not in str(e).lower():
                raise
            # Names are C++ symbols and Python frames: a stray invalid byte must not cost the file.
            return _decode(bytes(chunk).decode("utf-8", errors="replace").encode(), typed)
    except RecursionError:
        raise Unreadable(_too_deep()) from None
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        if "truncated" in str(e).lower() and not last:
            raise Truncated from None  # the cut fell inside a string or a nested list
        raise Unreadable(_decode_error(e, at - 1)) from None


def typed_decoder(record_type: Any) -> msgspec.json.Decoder:
    """The decoder of a chunk as ``list[record_type]``."""
    return msgspec.json.Decoder(GenericAlias(list, (record_type,)))


def read_events(
    fh: ByteStream,
    on_header: Callable[[dict], None],
    on_event: Callable[[dict], None],
    record_type: Any = None,
    on_records: Callable[[list], None] | None = None,
) -> None:
    """Read the binary stream ``fh`` (see module doc). Raises Unreadable or NotFast."""
    typed = None
    if record_type is not None and on_records is not None:
        typed = typed_decoder(record_type)
    header, rest, offset = _header(_blocks(fh))
    on_header(header)
    chunks = _chunks(rest, offset, fh)
    extend: bool | None = None
    while True:
        try:
            chunk, at, last = chunks.send(extend)
        except StopIteration:
            return
        extend = None
        try:
            typed_ok, values = decode_chunk(chunk, typed, at, last)
        except Truncated:
            extend = True
            continue
        deliver(typed_ok, values, on_event, on_records)


def deliver(
    typed_ok: bool, values: list[Any], on_event: Callable[[dict], None], on_records: Callable[[list], None] | None
) -> None:
    """A decoded chunk to its reader: the records at once, or each element that is an object."""
    if typed_ok and on_records is not None:
        on_records(values)
    else:
        for d in values:
            if isinstance(d, dict):
                on_event(d)
