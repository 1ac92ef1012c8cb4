"""How SignalGuard hands a SIGTERM on after writing, in this process: ``signal.raise_signal`` (which
with SIGTERM's default action would end the test process) is stood in by a recorder, so the signal
the guard re-raises, or the handler it calls instead, is checked in-process. The real default action
ends a forked child in test_signal_guard_edges.py."""

from __future__ import annotations

import os
import signal
import types

import pytest

from bridge_plugins.runtime.signals import SignalGuard


@pytest.fixture
def raised(monkeypatch):
    """The signals the guard re-raises (recorded, not raised); SIGTERM's and SIGINT's handlers restored after."""
    saved = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    got: list = []
    monkeypatch.setattr(signal, "raise_signal", got.append)
    yield got
    signal.signal(signal.SIGTERM, saved[0])
    signal.signal(signal.SIGINT, saved[1])


def sigterm() -> None:
    """A real SIGTERM to this process (its Python handler runs before this returns). A SIGTERM that
    came out as Ctrl-C would stop the whole test session: it fails this test instead."""
    try:
        os.kill(os.getpid(), signal.SIGTERM)
    except KeyboardInterrupt:
        pytest.fail("SIGTERM raised KeyboardInterrupt, as Ctrl-C does")


def test_with_the_default_action_the_guard_writes_gives_it_back_and_raises_sigterm_again(raised):
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    wrote = []
    guard = SignalGuard(lambda: wrote.append("wrote"), "rank 0")
    guard.install()
    sigterm()
    assert (wrote, raised) == (["wrote"], [signal.SIGTERM])
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_a_python_handler_before_the_guard_gets_the_signal_and_its_frame(raised):
    theirs = []
    signal.signal(signal.SIGTERM, lambda signum, frame: theirs.append((signum, type(frame))))
    guard = SignalGuard(lambda: theirs.append("wrote"), "rank 0")
    guard.install()
    sigterm()
    assert theirs == ["wrote", (signal.SIGTERM, types.FrameType)]
    assert raised == []  # their handler decided; SIGTERM is not raised again


def test_a_handler_set_from_c_is_taken_as_the_default_action(raised, monkeypatch):
    """``signal.signal`` returns None when the handler it replaces was installed from C (a launcher's or
    a library's): the guard then gives SIGTERM its default action, never swallows it."""
    real = signal.signal

    def from_c(signum, handler):
        previous = real(signum, handler)
        return None if signum == signal.SIGTERM and handler == guard._handle else previous

    monkeypatch.setattr(signal, "signal", from_c)
    wrote = []
    guard = SignalGuard(lambda: wrote.append("wrote"), "rank 0")
    guard.install()
    sigterm()
    assert (wrote, raised) == (["wrote"], [signal.SIGTERM])
    assert real(signal.SIGTERM, signal.SIG_DFL) == signal.SIG_DFL  # what the guard gave back


def test_ctrl_c_reaching_the_guard_after_its_hold_is_a_keyboard_interrupt(raised):
    """Code inside a hold that saved the guard's SIGINT handler and puts it back after the hold: the
    guard, no longer holding, acts as Python's default Ctrl-C handler."""
    guard = SignalGuard(lambda: None, "rank 0")
    with guard.hold():
        saved = signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGINT, saved)
    assert saved == guard._handle
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
    assert raised == []
