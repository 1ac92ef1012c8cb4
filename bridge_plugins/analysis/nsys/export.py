"""A ``.nsys-rep`` (or an older ``.qdrep``) read through its SQLite export, made once by ``nsys export``.

The export goes to a cache (``$BRIDGE_PLUGINS_CACHE`` or ``$XDG_CACHE_HOME/bridge-plugins``, else
``~/.cache/bridge-plugins``), under ``nsys/``, keyed by the report's path, size and modification time, so
a report is exported once and a changed one again. ``nsys export`` writes to a temporary name in
that folder that is renamed when it succeeds: an interrupted export leaves no half file to read.
Without an nsys on PATH (or ``$NSYS``) the report cannot be read, and the error says so in one line.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bridge_plugins.analysis.nsys.as_trace import summarize_export
from bridge_plugins.analysis.schema import TraceAsRead
from bridge_plugins.analysis.trace.reader import TraceError

RAW_CAPTURE = (
    "a raw nsys capture (.qdstrm) that was never imported into a report (nsys's importer did not run); "
    "import it where nsys is installed (QdstrmImporter -i FILE.qdstrm) and read the .nsys-rep"
)
NO_NSYS = (
    "an Nsight Systems report is read through its SQLite export and no nsys is on PATH: run "
    "'nsys export --type sqlite -o {sqlite} {path}' where nsys is installed, then read {sqlite}"
)
EXPORT_TIMEOUT_S = 3600
FORMAT = "nsys-rep"


def nsys_binary() -> str | None:
    """The nsys to export with: ``$NSYS`` when it names a program, else ``nsys`` on PATH."""
    return shutil.which(os.environ.get("NSYS") or "nsys")


def cache_dir() -> Path:
    base = os.environ.get("BRIDGE_PLUGINS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "bridge-plugins"
    )
    return Path(base) / "nsys"


def cached_export(path: Path) -> Path:
    """Where the export of the report at ``path``, as it is now, lives in the cache."""
    st = path.stat()
    key = hashlib.sha256(f"{path.resolve()}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:16]
    return cache_dir() / f"{path.name.rsplit('.', 1)[0]}-{key}.sqlite"


def export_report(path: Path) -> Path:
    """The SQLite export of the report at ``path``, made by ``nsys export`` when not cached. Raises TraceError."""
    path = Path(path)
    if path.name.endswith(".qdstrm"):
        raise TraceError(f"{path}: {RAW_CAPTURE}")
    try:
        target = cached_export(path)
    except OSError as e:
        raise TraceError(f"{path}: {e.strerror or e}") from None
    if target.is_file():
        return target
    nsys = nsys_binary()
    if nsys is None:
        raise TraceError(f"{path}: " + NO_NSYS.format(sqlite=path.with_suffix(".sqlite"), path=path))
    print(f"bridge-plugins: exporting {path} with {nsys} export (once; kept in {target.parent})", file=sys.stderr)
    try:
        _export_into(nsys, path, target)
    except OSError as e:  # the cache cannot be made or written: a read-only home, a full disk
        raise TraceError(f"{path}: cannot keep its export in {target.parent} ({e.strerror or e})") from None
    return target


def _export_into(nsys: str, path: Path, target: Path) -> None:
    """``nsys export`` of ``path`` into a private staging directory beside ``target``, then renamed
    to it (a reader never sees a partial export). Raises TraceError, or OSError from the file system."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".export-") as tmp:
        partial = Path(tmp) / target.name
        cmd = [
            nsys,
            "export",
            "--type",
            "sqlite",
            "--force-overwrite=true",
            "--quiet=true",
            "-o",
            str(partial),
            str(path),
        ]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=EXPORT_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise TraceError(f"{path}: nsys export failed ({e})") from None
        if done.returncode != 0 or not partial.is_file():
            last = (done.stderr or done.stdout).strip().splitlines()[-1:] or [f"exit {done.returncode}"]
            raise TraceError(f"{path}: nsys export failed: {last[0]}")
        os.replace(partial, target)


def summarize_report(path: Path, *, timelines: bool = True) -> TraceAsRead:
    """The trace entry of a ``.nsys-rep``: its export's, with the report's own name and format."""
    return dataclasses.replace(summarize_export(export_report(Path(path)), shown_as=Path(path)), format=FORMAT)
