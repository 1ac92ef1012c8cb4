"""The one base of the readers' input errors, a file that cannot be analysed, named with why; and
``Problem``, such a file in a result that read the others (the Summary's, a snapshot entry's).

``TraceError`` (a trace) and ``SnapshotFormatError`` (a memory snapshot, also a ValueError for its
callers) derive from it, so the CLI turns any of them into one error line and exit 2 in one place.
"""

from __future__ import annotations

from dataclasses import dataclass

from bridge_plugins.config.errors import BridgePluginsError


class AnalysisInputError(BridgePluginsError):
    """A file the analysis cannot read: ``str(e)`` is '<file>: <what is wrong>'."""


@dataclass(kw_only=True)
class Problem:
    """A file that could not be read, and why (one line)."""

    file: str
    error: str
