"""Plans and edits: how a plugin changes nothing until everything it will change is known.

Functions named ``plan_*`` validate and compute first and return an *edit*: a no-argument
callable that only assigns. A plugin applies all its edits at the end of ``setup``, so a
``setup`` that raises leaves the executor and the task untouched.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterable

from bridge_plugins.config.errors import BridgePluginsError, BridgePluginsWarning

Edit = Callable[[], None]


class ProfilingPluginWarning(BridgePluginsWarning):
    """A plugin changed or dropped something the user asked for, and says why."""


class NsysNotFoundWarning(ProfilingPluginWarning):
    """No ``nsys`` where a local job would run: ``exp.run()`` will refuse (``exp.dryrun()`` works)."""


class NsysNotFoundError(BridgePluginsError, FileNotFoundError):
    """``exp.run()`` of a job that runs on this machine under nsys, with no ``nsys`` binary on the
    job's PATH: refused before anything launches. A FileNotFoundError, as NeMo Run's own launch
    failure was, so code that caught that still catches this."""


# frames of these packages are skipped when a warning names its line
_LIBRARY_MODULES = ("bridge_plugins.", "nemo_run.", "fiddle.")


def warn(message: str, category: type = ProfilingPluginWarning) -> None:
    """Warn, naming the first line outside bridge_plugins and NeMo Run: the user's ``exp.add(...)``
    or ``plugin.setup(...)``, not the line of ours that noticed (Python 3.11 has no
    ``skip_file_prefixes``)."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith(_LIBRARY_MODULES):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level + 1)


def apply(edits: Iterable[Edit | None]) -> None:
    """Run the edits of a plan, in order (only after everything was computed)."""
    for edit in edits:
        if edit is not None:
            edit()
