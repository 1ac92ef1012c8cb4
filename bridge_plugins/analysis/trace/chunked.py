"""The fast trace reader: decompress with ISA-L, cut ``traceEvents`` into chunks of whole events
(cutting.py, after the header: header.py), and decode each chunk with msgspec, never holding
more than a few MB of the file.

Why chunks: msgspec decodes a whole document at C speed but needs it all in memory; a chunk that
ends on an event boundary is a small JSON array of its own. How a boundary is found, the limits
(``MAX_PIECE_BYTES``, nesting, whitespace) and the errors (:class:`Unreadable`, :class:`NotFast`
for the streaming reader): docs/limits.md ("How a trace is read").
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from types import GenericAlias
from typing import Any, BinaryIO, cast

import msgspec

from bridge_plugins.analysis.trace.cutting import ByteStream as ByteStream
from bridge_plugins.analysis.trace.cutting import blocks, chunks
from bridge_plugins.analysis.trace.header import GENERIC, GZIP_MAGIC, decode_error, header, too_deep
from bridge_plugins.analysis.trace.header import NotFast as NotFast
from bridge_plugins.analysis.trace.header import Unreadable as Unreadable
from bridge_plugins.config.errors import BridgePluginsError

try:  # ISA-L's gzip is ~3x faster than zlib's, and can decompress in a thread of its own
    from isal import igzip_threaded
    from isal.isal_zlib import _GzipReader as GzipReader  # IGzipFile's raw reader (isal_zlib.pyi)
except ImportError:  # pragma: no cover - isal ships wheels for every platform we run on
    igzip_threaded = None  # type: ignore[assignment]
    GzipReader = None  # type: ignore[misc, assignment]

READ_BUFFER_BYTES = 1 << 19
"""The compressed bytes ISA-L's raw reader reads at a time (what ``IGzipFile`` gives it)."""
THREADED_GZIP = 0 if os.environ.get("BRIDGE_PLUGINS_GZIP_THREAD") == "0" else 1


@contextmanager
def open_stream(raw: BinaryIO, gzipped: bool, threads: int = THREADED_GZIP) -> Iterator[ByteStream]:
    """``raw`` (a binary file), decompressed if ``gzipped`` (the file name says so): by ISA-L in a
    second thread, which overlaps decompressing the next MB with decoding this one. Closed on the
    way out, error or not: left to the garbage collector (a traceback can hold it in a cycle),
    ISA-L's reader joins its thread wherever the collector happens to run, once inside another
    thread's start, where threading's shutdown lock is held and the join waits for it forever.
    ``threads`` 0: inflate in this thread (a read in ranges, whose processes fill the cores), by
    ISA-L's raw reader, which inflates straight into the caller's buffer (``readinto``): a
    ``GzipFile`` reads into a new ``bytes`` and copies it (~2 % of a read's CPU)."""
    if not gzipped:
        yield cast(ByteStream, raw)  # a buffered file (open_regular), which has readinto; its opener closes it
        return
    magic = raw.read(2)
    raw.seek(0)
    if magic != GZIP_MAGIC:
        raise Unreadable(f"not a gzip file (it starts with {magic!r}, not {GZIP_MAGIC!r})")
    if igzip_threaded is None:
        fh: Any = gzip.GzipFile(fileobj=raw, mode="rb")
    elif threads == 0:
        fh = GzipReader(raw, READ_BUFFER_BYTES)
    else:
        fh = igzip_threaded.open(raw, "rb", threads=threads)
    with closing(fh):
        yield fh


def _decode(chunk: bytes | bytearray | memoryview, typed: msgspec.json.Decoder | None) -> tuple[bool, list[Any]]:
    """(True, records) or (False, the JSON values: dicts where they are events); raises msgspec's
    errors as they come."""
    if typed is not None:
        try:
            return True, typed.decode(chunk)
        except msgspec.ValidationError:
            pass  # an unexpected type somewhere: the general path reads this chunk
    return False, GENERIC.decode(chunk)


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
        raise Unreadable(too_deep()) from None
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        if "truncated" in str(e).lower() and not last:
            raise Truncated from None  # the cut fell inside a string or a nested list
        raise Unreadable(decode_error(e, at - 1)) from None


def typed_decoder(record_type: Any) -> msgspec.json.Decoder:
    """The decoder of a chunk as ``list[record_type]``."""
    return msgspec.json.Decoder(GenericAlias(list, (record_type,)))


def read_events(
    fh: ByteStream,
    on_header: Callable[[dict], None],
    on_event: Callable[[dict], None],
    record_type: Any = None,
    on_records: Callable[[list], None] | None = None,
    on_chunk: Callable[[bytes | bytearray | memoryview], bool] | None = None,
) -> None:
    """Read the binary stream ``fh`` (see module doc); ``on_chunk``: see :func:`read_chunk`. Raises
    Unreadable or NotFast."""
    typed = None
    if record_type is not None and on_records is not None:
        typed = typed_decoder(record_type)
    head, rest, offset = header(blocks(fh))
    on_header(head)
    pieces = chunks(rest, offset, fh)
    extend: bool | None = None
    while True:
        try:
            chunk, at, last = pieces.send(extend)
        except StopIteration:
            return
        extend = None
        try:
            read_chunk(chunk, typed, at, last, on_event, on_records, on_chunk)
        except Truncated:
            extend = True


def read_chunk(
    chunk: bytes | bytearray | memoryview,
    typed: msgspec.json.Decoder | None,
    at: int,
    last: bool,
    on_event: Callable[[dict], None],
    on_records: Callable[[list], None] | None,
    on_chunk: Callable[[bytes | bytearray | memoryview], bool] | None = None,
) -> None:
    """One chunk to its reader: whole to ``on_chunk`` (the collector's native reader) where that
    takes it (True), else decoded (:func:`decode_chunk`) and delivered (:func:`deliver`). Raises
    Truncated or Unreadable."""
    if on_chunk is not None and on_chunk(chunk):
        return
    typed_ok, values = decode_chunk(chunk, typed, at, last)
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
