"""Signals on a profiled rank: SIGTERM writes what was captured, and no signal cuts a write short.

While a profile is being written (a ``hold()``), SIGTERM and SIGINT are recorded, logged once and
delivered when the hold ends. Before a SIGTERM is delivered, ``on_sigterm`` runs once (inside a
hold) and writes what was captured; delivery then puts back the previous handler and calls it, or
re-raises the signal. Why (scancel signals twice, Ctrl-C inside ``Thread.join``): docs/guarantees.md.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

log = logging.getLogger("bridge_plugins")

_NAMES: dict[int, str] = {signal.SIGTERM: "SIGTERM", signal.SIGINT: "SIGINT (Ctrl-C)"}


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


class SignalGuard:
    """Owns SIGTERM from ``install()`` to ``uninstall()``; ``hold()`` defers SIGTERM and SIGINT."""

    def __init__(self, on_sigterm: Callable[[], None], who: str) -> None:
        self._on_sigterm, self._who = on_sigterm, who
        self._prev_term: Any = signal.SIG_DFL
        self._installed = False
        self._depth = 0
        self._saved_int: Any = None
        self._pending: list[tuple[int, Any]] = []
        self._logged: set = set()
        self._wrote = False  # on_sigterm ran for the SIGTERM about to be delivered

    def install(self) -> None:
        """Take SIGTERM (main thread only; elsewhere Python cannot, and nothing changes)."""
        if not _main_thread():
            return
        try:
            prev = signal.signal(signal.SIGTERM, self._handle)
        except (ValueError, OSError):
            return
        self._prev_term = signal.SIG_DFL if prev is None else prev  # None: set from C; treat as default
        self._installed, self._wrote = True, False

    def uninstall(self) -> None:
        """Give SIGTERM back, unless someone took it over since (their handler stays)."""
        if not self._installed:
            return
        self._installed = False
        try:
            if signal.getsignal(signal.SIGTERM) == self._handle:
                signal.signal(signal.SIGTERM, self._prev_term)
        except (ValueError, OSError):
            pass

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Defer SIGTERM and SIGINT until the outermost hold ends, then deliver them in order."""
        self._depth += 1
        if self._depth == 1 and _main_thread():
            try:
                self._saved_int = signal.signal(signal.SIGINT, self._handle)
            except (ValueError, OSError):
                self._saved_int = None
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                if self._saved_int is not None:
                    try:
                        if signal.getsignal(signal.SIGINT) == self._handle:
                            signal.signal(signal.SIGINT, self._saved_int)
                    except (ValueError, OSError):
                        pass
                    self._saved_int = None
                self._deliver()

    def _handle(self, signum: int, frame: Any) -> None:
        if signum != signal.SIGTERM and not self._depth:  # SIGINT after a hold that could not give it back
            signal.default_int_handler(signum, frame)
        if self._depth:
            if all(s != signum for s, _ in self._pending):
                self._pending.append((signum, frame))
            if signum not in self._logged:  # once per kind: a second SIGTERM is held like the first
                self._logged.add(signum)
                log.warning(
                    "%s: %s received while the profile is being written: held until the write is done "
                    "(SIGKILL abandons it)",
                    self._who,
                    _NAMES.get(signum, signum),
                )
            return
        self._pending.append((signum, frame))
        self._deliver()

    def _deliver(self) -> None:
        if not self._wrote and any(s == signal.SIGTERM for s, _ in self._pending):
            self._wrote = True
            with self.hold():  # its end delivers what is pending
                self._on_sigterm()
            return
        pending, self._pending = self._pending, []
        for signum, frame in pending:
            if signum == signal.SIGTERM:
                prev = self._prev_term
                self.uninstall()
                if callable(prev):
                    prev(signum, frame)
                elif prev == signal.SIG_DFL:
                    signal.raise_signal(signum)
            else:  # the SIGINT handler is back in place: let it act (KeyboardInterrupt, by default)
                signal.raise_signal(signum)
