"""SignalGuard in one process, with real signals raised at itself: what is held, what is delivered
after the hold, and which handlers are in place afterwards."""

from __future__ import annotations

import signal

import pytest

from bridge_plugins.runtime.signals import SignalGuard


@pytest.fixture
def handlers():
    saved = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGTERM, saved[0])
    signal.signal(signal.SIGINT, saved[1])


def test_ctrl_c_in_a_hold_is_raised_when_it_ends(handlers):
    before = signal.getsignal(signal.SIGINT)
    done = []
    with pytest.raises(KeyboardInterrupt):
        with SignalGuard(lambda: None, "test").hold():
            signal.raise_signal(signal.SIGINT)
            done.append("the write went on")
    assert done == ["the write went on"]
    assert signal.getsignal(signal.SIGINT) is before


def test_sigterms_in_a_hold_reach_the_previous_handler_once_after_it(handlers):
    got = []

    def theirs(signum, frame):
        got.append(("theirs", signum))

    signal.signal(signal.SIGTERM, theirs)
    guard = SignalGuard(lambda: got.append("wrote what was captured"), "test")
    guard.install()
    with guard.hold():
        signal.raise_signal(signal.SIGTERM)
        signal.raise_signal(signal.SIGTERM)  # a second one, 0.3 s later in real life
        got.append("write done")
    # what was captured is written (a close may have only started an export) before theirs runs
    assert got == ["write done", "wrote what was captured", ("theirs", signal.SIGTERM)]
    assert signal.getsignal(signal.SIGTERM) is theirs  # given back before it was called


def test_sigterm_outside_a_hold_writes_first_then_is_delivered(handlers):
    got = []
    signal.signal(signal.SIGTERM, lambda signum, frame: got.append("theirs"))
    guard = SignalGuard(lambda: got.append("wrote what was captured"), "test")
    guard.install()
    signal.raise_signal(signal.SIGTERM)
    assert got == ["wrote what was captured", "theirs"]
    guard.uninstall()
