"""SIGTERM for the on-demand windows: write what an open window captured, then let SIGTERM take its course.

Apart from the job's controller because the on-demand windows are closed together (every export
joined), and a window in the middle of closing must be left to finish: the signal is then kept
pending, and the next step (or the job's exit) completes it.
"""

from __future__ import annotations

import signal
import threading
from typing import Any, Callable, Optional


class _SigtermReceived(Exception):
    """Passed to a window's ``__exit__`` on SIGTERM, so its early-close warning names the cause."""


class OnDemandSigterm:
    """Installs a SIGTERM handler that calls ``close(_SigtermReceived)``, then the previous handler.

    ``busy()`` says whether a window is closing right now; if so the signal waits in ``pending``
    until its owner calls :meth:`finish`.
    """

    def __init__(self, close: Callable[[type], None], busy: Callable[[], bool]):
        self._close, self._busy = close, busy
        self._prev: Any = None
        self.pending: Optional[tuple] = None  # (signum, frame) of a SIGTERM not yet acted on

    def install(self) -> None:
        """Only on the main thread (where Python delivers signals); elsewhere SIGTERM is left alone."""
        if threading.current_thread() is not threading.main_thread():
            return
        try:
            prev = signal.signal(signal.SIGTERM, self._on_sigterm)
        except (ValueError, OSError):
            return
        self._prev = signal.SIG_DFL if prev is None else prev

    def restore(self) -> None:
        """Put the previous handler back, unless someone replaced ours meanwhile."""
        prev, self._prev = self._prev, None
        try:
            if prev is not None and signal.getsignal(signal.SIGTERM) == self._on_sigterm:
                signal.signal(signal.SIGTERM, prev)
        except (ValueError, OSError):
            pass

    def _on_sigterm(self, signum, frame) -> None:
        self.pending = (signum, frame)
        if not self._busy():
            self.finish()

    def finish(self) -> None:
        """Close the windows (``close`` restores the previous handler), then deliver the pending SIGTERM."""
        signum, frame = self.pending
        self.pending = None
        prev = self._prev
        self._close(_SigtermReceived)
        if callable(prev):
            prev(signum, frame)
        elif prev == signal.SIG_DFL:
            signal.raise_signal(signum)
