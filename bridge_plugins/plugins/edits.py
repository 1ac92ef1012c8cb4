"""Plans and edits: how a plugin changes nothing until everything it will change is known.

Functions named ``plan_*`` validate and compute first and return an *edit*: a no-argument
callable that only assigns. A plugin applies all its edits at the end of ``setup``, so a
``setup`` that raises leaves the executor and the task untouched.
"""

from __future__ import annotations

import warnings
from typing import Callable, Iterable, Optional

Edit = Callable[[], None]


class ProfilingPluginWarning(UserWarning):
    """A plugin changed or dropped something the user asked for, and says why."""


class NsysNotFoundError(FileNotFoundError):
    """``exp.run()`` of a job that runs on this machine under nsys, with no ``nsys`` binary on the
    job's PATH: refused before anything launches. A FileNotFoundError, as NeMo Run's own launch
    failure was, so code that caught that still catches this."""


def warn(message: str) -> None:
    warnings.warn(message, ProfilingPluginWarning, stacklevel=3)


def apply(edits: Iterable[Optional[Edit]]) -> None:
    """Run the edits of a plan, in order (only after everything was computed)."""
    for edit in edits:
        if edit is not None:
            edit()
