"""Open an Nsight Systems SQLite export read-only and say what its schema version has.

Exports differ by nsys version: tables appear only when their data was captured (no
``CUPTI_ACTIVITY_KIND_SYNCHRONIZATION`` without sync tracing, no ``NVTX_EVENTS`` without NVTX),
columns come and go (``textId`` beside inline ``text``, ``greenContextId``), and names are ids into
``StringIds`` or inline text. :class:`Export` answers "is it there" so every query can leave out
what is missing instead of failing.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from bridge_plugins.analysis.trace.reader import TraceError
from bridge_plugins.jobdir.regular_file import NotARegularFile, open_regular

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
NVTX = "NVTX_EVENTS"
STRINGS = "StringIds"
ACTIVITY_TABLES = (KERNEL, MEMCPY, MEMSET, RUNTIME, SYNC, NVTX)
SQLITE_MAGIC = b"SQLite format 3\x00"
CACHE_KIB = 32 * 1024  # SQLite's page cache and sorter memory per connection: the reader's bound
NOT_NSYS = (
    "an SQLite file without Nsight Systems tables (no CUPTI_ACTIVITY_KIND_* or NVTX_EVENTS), so not an nsys export"
)


@dataclass
class Export:
    """An open export: its connection, tables and their columns, and the nsys version that wrote it."""

    path: Path
    conn: sqlite3.Connection
    columns: dict[str, set[str]] = field(default_factory=dict)  # table -> its columns
    version: str | None = None  # EXPORT_PRODUCT_VERSION, e.g. '2022.2.1.31'
    schema_version: str | None = None  # EXPORT_SCHEMA_VERSION, e.g. '2.9.1'

    def has(self, table: str, *cols: str) -> bool:
        """Whether ``table`` exists (with every column in ``cols``)."""
        return table in self.columns and all(c in self.columns[table] for c in cols)

    def rows(self, table: str) -> int:
        return int(self.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]) if table in self.columns else 0

    def names(self, ids: list) -> dict:
        """Each id to its ``StringIds`` value; an inline text name (an older or foreign export) is its own name."""
        out = {i: i for i in ids if isinstance(i, str)}
        wanted = [i for i in ids if isinstance(i, int)]
        if wanted and STRINGS in self.columns:
            self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS wanted_ids(id INTEGER PRIMARY KEY)")
            self.conn.execute("DELETE FROM temp.wanted_ids")
            self.conn.executemany("INSERT OR IGNORE INTO temp.wanted_ids VALUES (?)", ((i,) for i in wanted))
            sql = "SELECT s.id, s.value FROM temp.wanted_ids w JOIN StringIds s ON s.id = w.id"
            out.update(dict(self.conn.execute(sql)))
        return {i: str(out.get(i, f"[unnamed {i}]")) for i in ids}

    def close(self) -> None:
        self.conn.close()


def is_sqlite(path: Path) -> bool:
    """Whether the file starts with SQLite's header (read through the one safe open)."""
    try:
        with open_regular(path) as fh:
            return fh.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except (OSError, NotARegularFile):
        return False


def open_export(path: Path, shown_as: Path | None = None) -> Export:
    """The export at ``path``, read-only. Raises TraceError ('<file>: why', the file ``shown_as`` when
    given: the report it was exported from) for anything that is not one."""
    path = Path(path)
    shown = shown_as or path
    try:
        with open_regular(path) as fh:
            head = fh.read(len(SQLITE_MAGIC))
    except (OSError, NotARegularFile) as e:
        raise TraceError(f"{shown}: {getattr(e, 'strerror', None) or e}") from None
    if head != SQLITE_MAGIC:
        raise TraceError(
            f"{shown}: not an SQLite file, so not an nsys export (export a report with nsys export --type sqlite)"
        )
    try:
        conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True, check_same_thread=False)
        conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        conn.execute("PRAGMA temp_store = FILE")  # sorts of GB-sized tables spill to disk, not to RAM
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        columns = {t: {r[1] for r in conn.execute(f'PRAGMA table_info("{t}")')} for t in tables}
    except sqlite3.DatabaseError as e:
        raise TraceError(f"{shown}: not a readable SQLite database ({e})") from None
    if "EXPORT_META_DATA" not in columns and not any(t in columns for t in ACTIVITY_TABLES):
        conn.close()  # an export with nothing we read (only OS runtime calls, say) still has its meta data
        raise TraceError(f"{shown}: {NOT_NSYS}")
    export = Export(path, conn, columns)
    if "EXPORT_META_DATA" in columns:
        meta = dict(conn.execute("SELECT name, value FROM EXPORT_META_DATA"))
        export.version, export.schema_version = meta.get("EXPORT_PRODUCT_VERSION"), meta.get("EXPORT_SCHEMA_VERSION")
    return export


def sql_errors(path: Path, e: sqlite3.Error) -> TraceError:
    """A query that failed on this export (a damaged file, a schema we do not know) as one line."""
    return TraceError(f"{path}: the nsys export could not be read ({type(e).__name__}: {e})")
