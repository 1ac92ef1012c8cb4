"""Read a Chrome trace (``.json`` or ``.json.gz``) event by event, never holding the file in memory.

Why not ``json.load``: a trace of a long window is GBs of JSON, and a parsed document needs several
times that in RAM. Two streaming readers: the fast one (:mod:`.chunked`) first, ijson as the
fallback. Every way a file can be unreadable becomes :class:`TraceError` with a one-line message
naming the file, so callers can list it and go on with the other files. Which reader when, the
header, and the limits on hostile files: docs/limits.md.
"""

from __future__ import annotations

import functools
import gzip
import io
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import IO, TYPE_CHECKING, cast

from bridge_plugins.analysis.errors import AnalysisInputError
from bridge_plugins.jobdir.regular_file import NotARegularFile, open_regular

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

try:
    from bridge_plugins.analysis.trace import chunked
except ImportError:  # pragma: no cover - msgspec is a dependency; the streaming reader still works
    chunked = None  # type: ignore[assignment]


@functools.cache
def backends() -> tuple[ModuleType, ModuleType]:
    """ijson's backends: the one the streaming reader uses first, and the pure-Python one. Imported
    on first use: the fast reader reads nearly every file, and ijson costs ~10 ms to import."""
    import ijson

    try:  # the C backend is ~10x faster; fall back to whatever ijson picked
        first = ijson.get_backend("yajl2_c")
    except (ImportError, ValueError):
        first = ijson
    return first, ijson.get_backend("python")


MAX_DEPTH = 1000  # nesting the streaming reader accepts (docs/limits.md)
_GZIP_ERRORS: tuple[type[BaseException], ...] = (zlib.error,)
try:
    from isal.isal_zlib import error as _isal_error

    _GZIP_ERRORS += (cast(type[BaseException], _isal_error),)  # its stub calls it an instance
except ImportError:  # pragma: no cover
    pass
_READ_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    EOFError,
    ValueError,
    *_GZIP_ERRORS,
)  # what reading a file may raise


class TraceError(AnalysisInputError):
    """A file that cannot be read as a trace: ``str(e)`` is '<file>: <what is wrong>'."""


_NAMED: tuple[type[Exception], ...] = (TraceError,) if chunked is None else (TraceError, chunked.Unreadable)


@contextmanager
def _open(path: Path, replace_bad_utf8: bool = False) -> Iterator[IO[bytes] | io.RawIOBase]:
    with open_regular(path) as raw:
        fh: IO[bytes] | io.RawIOBase = (
            cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="rb")) if path.name.endswith(".gz") else raw
        )
        if replace_bad_utf8:
            # Names in traces are C++ symbols and Python frames; a stray invalid byte must not cost the file.
            fh = _Utf8Bytes(io.TextIOWrapper(cast(IO[bytes], fh), encoding="utf-8", errors="replace"))
        yield fh


class _Utf8Bytes(io.RawIOBase):
    """Re-encode a text stream (invalid bytes already replaced) to UTF-8 for ijson's byte reader."""

    def __init__(self, text: io.TextIOWrapper) -> None:
        self._text, self._pending = text, b""

    def readable(self) -> bool:
        return True

    def read(self, n: int | None = -1, /) -> bytes:
        n = -1 if n is None else n
        while n < 0 or len(self._pending) < n:
            chunk = self._text.read(65536 if n < 0 else max(n, 65536))
            if not chunk:
                break
            self._pending += chunk.encode("utf-8")
        out, self._pending = (self._pending, b"") if n < 0 else (self._pending[:n], self._pending[n:])
        return out

    def readinto(self, b: WriteableBuffer, /) -> int:  # what yajl2_c calls (RawIOBase's raises NotImplementedError)
        view = memoryview(b).cast("B")
        out = self.read(len(view))
        view[: len(out)] = out
        return len(out)

    def close(self) -> None:
        self._text.close()
        super().close()


def _too_deep(limit: int) -> TraceError:
    return TraceError(f"JSON nested too deeply (more than {limit} levels; see docs/limits.md)")


def _stream(
    fh: IO[bytes] | io.RawIOBase,
    backend: ModuleType,
    on_header: Callable[[dict], None],
    on_event: Callable[[dict], None],
    limit: int = MAX_DEPTH,
) -> None:
    """One pass of ijson's ``basic_parse``: the top-level keys before ``traceEvents`` go to
    ``on_header``, then each object in it to ``on_event``. Not ``parse``/``items``: their prefixes
    grow with the nesting, so 200,000 levels take GBs before any check could run."""
    import ijson

    depth, key, in_events = 0, None, False
    header: dict = {}
    builder, whole_at = None, 0  # a header value or an event being built, whole when depth is whole_at
    for n, (event, value) in enumerate(backend.basic_parse(fh, use_float=True)):
        if event == "start_map" or event == "start_array":
            depth += 1
            if depth > limit:
                raise _too_deep(limit)
        elif event == "end_map" or event == "end_array":
            depth -= 1
        if builder is not None:
            builder.event(event, value)
            if depth == whole_at:
                if not in_events:
                    header[key] = builder.value
                elif isinstance(builder.value, dict):
                    on_event(builder.value)
                builder = None
        elif n == 0 and event != "start_map":
            raise TraceError("the top level is not a JSON object, so this is not a Chrome trace")
        elif in_events:
            if depth == 1:  # the end of traceEvents: what follows is not read
                return
            if depth == 3:  # an element that is an object or an array
                builder, whole_at = ijson.ObjectBuilder(), 2
                builder.event(event, value)
        elif depth == 1 and event == "map_key":
            key = value
        elif depth == 2 and key == "traceEvents" and event == "start_array":
            on_header(header)
            in_events = True
        elif depth == 2:
            builder, whole_at = ijson.ObjectBuilder(), 1
            builder.event(event, value)
        elif depth == 1 and n > 0:
            header[key] = value  # a scalar value
    raise TraceError("no traceEvents list, so this is not a Chrome trace")


def _describe(e: BaseException) -> str:
    import ijson

    if isinstance(e, (EOFError, *_GZIP_ERRORS)) or "end of stream" in str(e).lower():
        return "truncated gzip stream (the file was cut off while being written or copied)"
    if isinstance(e, gzip.BadGzipFile):
        return f"not a gzip file ({e})"
    if isinstance(e, ijson.JSONError):
        msg = " ".join(str(e).split())[:160]
        return f"not valid JSON ({msg})" if msg else "not valid JSON (the file ends early)"
    if isinstance(e, OSError):
        return e.strerror or str(e)
    return f"{type(e).__name__}: {e}"


def _retry_with(e: BaseException, replace_bad_utf8: bool, backend: ModuleType) -> tuple[bool, ModuleType] | None:
    """The next way to read a file that failed with ``e``, or None if no other way can help.

    yajl2_c refuses invalid UTF-8 and integers past 64 bits (Kineto writes uint64 addresses), both
    valid in a trace: reread with bad bytes replaced, then with ijson's pure-Python backend.
    """
    msg = str(e).lower()
    if (isinstance(e, UnicodeDecodeError) or "utf" in msg) and not replace_bad_utf8:
        return True, backend
    python_backend = backends()[1]
    if "overflow" in msg and backend is not python_backend:
        return replace_bad_utf8, python_backend
    return None


def _read_streaming(path: Path, on_header: Callable[[dict], None], on_event: Callable[[dict], None]) -> None:
    import ijson

    replace_bad_utf8, backend = False, backends()[0]
    while True:
        try:
            with _open(path, replace_bad_utf8) as fh:
                _stream(fh, backend, on_header, on_event)
            return
        except (UnicodeDecodeError, ijson.JSONError) as e:
            retry = _retry_with(e, replace_bad_utf8, backend)
            if retry is None:
                raise TraceError(_describe(e)) from None
            replace_bad_utf8, backend = retry


def read_trace(
    path: Path,
    on_header: Callable[[dict], None],
    on_event: Callable[[dict], None],
    record_type: object = None,
    on_records: Callable[[list], None] | None = None,
    on_chunk: Callable[[bytes | bytearray | memoryview], bool] | None = None,
) -> None:
    """Call ``on_header(header)``, then, for every element of traceEvents that is an object, either
    ``on_records(list of records)`` per chunk (decoded as ``record_type``, a msgspec Struct of the
    fields the caller reads: the fast path) or ``on_event(dict)`` (where a value has an unexpected type, and in the
    streaming reader); with ``on_records``, ``on_chunk(chunk)`` first where given (chunked.read_chunk).

    ``on_header`` starts the file: it is called again, and the caller must drop what it gathered,
    if the file is reread another way. Raises TraceError for a file that is missing, not gzip,
    truncated, not JSON, not a trace, or past a limit (docs/limits.md).
    """
    path = Path(path)
    if record_type is None or on_records is None:
        record_type, on_records, on_chunk = None, None, None
    with named_errors(path):
        if chunked is not None:
            try:
                with open_regular(path) as raw, chunked.open_stream(raw, path.name.endswith(".gz")) as fh:
                    chunked.read_events(fh, on_header, on_event, record_type, on_records, on_chunk)
                return
            except chunked.NotFast:
                pass
        _read_streaming(path, on_header, on_event)


@contextmanager
def named_errors(path: Path) -> Iterator[None]:
    """Every way reading ``path`` fails as one TraceError, '<file>: <what is wrong>'."""
    try:
        yield
    except _NAMED as e:
        raise TraceError(f"{path}: {e}") from None
    except NotARegularFile as e:
        raise TraceError(f"{path}: {e}") from None
    except _READ_ERRORS as e:
        raise TraceError(f"{path}: {_describe(e)}") from None
