"""SignalGuard's edges with real signals: nested holds, the one warning per kind, a handler that is
not ours, a thread that cannot take signals, and SIGTERM's default action (in a forked child)."""

from __future__ import annotations

import logging
import os
import signal
import threading

import pytest

from bridge_plugins.runtime.signals import SignalGuard


@pytest.fixture
def handlers():
    saved = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGTERM, saved[0])
    signal.signal(signal.SIGINT, saved[1])


def warnings_of(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_signals_held_twice_are_logged_once_per_kind_and_delivered_in_order(handlers, caplog):
    got = []
    signal.signal(signal.SIGTERM, lambda s, f: got.append("theirs"))
    guard = SignalGuard(lambda: got.append("wrote"), "rank 2")
    guard.install()
    with pytest.raises(KeyboardInterrupt), guard.hold():
        with guard.hold():
            signal.raise_signal(signal.SIGTERM)
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGTERM)
        got.append("inner hold ended")  # nothing is delivered before the outermost hold ends
    assert got == ["inner hold ended", "wrote", "theirs"]
    assert warnings_of(caplog) == [
        "rank 2: SIGTERM received while the profile is being written: held until the write is done "
        "(SIGKILL abandons it)",
        "rank 2: SIGINT (Ctrl-C) received while the profile is being written: held until the write is done "
        "(SIGKILL abandons it)",
    ]


def test_a_handler_set_after_install_is_left_in_place(handlers):
    guard = SignalGuard(lambda: None, "test")
    guard.install()

    def later(signum, frame):
        pass

    signal.signal(signal.SIGTERM, later)
    guard.uninstall()
    assert signal.getsignal(signal.SIGTERM) is later
    guard.uninstall()  # a second time: nothing to give back


def test_uninstall_gives_back_the_previous_handler(handlers):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    guard = SignalGuard(lambda: None, "test")
    guard.install()
    assert signal.getsignal(signal.SIGTERM) == guard._handle
    guard.uninstall()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN


def test_an_ignored_sigterm_is_written_for_and_then_stays_ignored(handlers):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    got = []
    guard = SignalGuard(lambda: got.append("wrote"), "test")
    guard.install()
    signal.raise_signal(signal.SIGTERM)
    assert got == ["wrote"] and signal.getsignal(signal.SIGTERM) is signal.SIG_IGN


def test_off_the_main_thread_nothing_is_taken(handlers):
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    guard = SignalGuard(lambda: None, "test")
    seen = []

    def elsewhere():
        guard.install()
        with guard.hold():
            seen.append((signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)))

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join()
    assert seen == [before] and not guard._installed


def test_sigterm_with_the_default_action_writes_then_ends_the_process():
    """In a forked child: the guard writes what was captured, then SIGTERM's default action ends it."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            guard = SignalGuard(lambda: os.write(write, b"wrote;"), "child")
            guard.install()
            signal.raise_signal(signal.SIGTERM)
            os.write(write, b"survived;")
        finally:
            os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(read, "rb") as f:
        assert f.read() == b"wrote;"
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM
