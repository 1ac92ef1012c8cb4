"""The one base of the readers' input errors: a file that cannot be analysed, named with why.

``TraceError`` (a trace) and ``SnapshotFormatError`` (a memory snapshot, also a ValueError for its
callers) derive from it, so the CLI turns any of them into one error line and exit 2 in one place.
"""

from __future__ import annotations

from bridge_plugins.config.errors import BridgePluginsError


class AnalysisInputError(BridgePluginsError):
    """A file the analysis cannot read: ``str(e)`` is '<file>: <what is wrong>'."""
