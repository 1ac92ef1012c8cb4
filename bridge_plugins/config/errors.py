"""The one base of every error this package raises of its own (``BridgePluginsError``) and of its
own warnings (``BridgePluginsWarning``), so a caller can catch "ours" in one clause.

Here, in ``config`` (standard library only, the bottom layer), because every side may import it:
the launch side, the job side, the readers and the CLI. Each error keeps its built-in base too
(``OSError``, ``ValueError``, ...), so the ``except`` clauses that catch those are unchanged.
"""

from __future__ import annotations


class BridgePluginsError(Exception):
    """Base of every exception class defined in ``bridge_plugins``."""


class BridgePluginsWarning(UserWarning):
    """Base of every warning category defined in ``bridge_plugins``."""
