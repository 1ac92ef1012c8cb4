"""SignalGuard in one process, with real signals raised at itself: what is held, what is delivered
after the hold, and which handlers are in place afterwards."""

from __future__ import annotations

import signal

import pytest

from bridge_plugins.runtime.backend import Backend
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
    with pytest.raises(KeyboardInterrupt), SignalGuard(lambda: None, "test").hold():
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


def test_sigterm_while_the_window_opens_leaves_no_profiler_running(handlers, tmp_path, monkeypatch, caplog):
    """SIGTERM landing in the first window step's ``window_begin`` (torch.profiler's start takes
    long enough to be hit) used to run the close before the PyTorch profiler had started; start
    then went on, and with a graceful SIGTERM handler training continued under a profiler nobody
    stopped (every op recorded, memory growing), and the close logged 'steps 3-None'. Now the
    opening is held like a close: the SIGTERM is delivered after it, and the window it opened is
    closed and written. The stand-in backend only raises the signal at that moment (registry order:
    it opens before the real PyTorch profiler)."""
    import torch

    from bridge_plugins import ProfilingConfig, ProfilingController
    from bridge_plugins.runtime import registry
    from bridge_plugins.runtime.torch_profiler import profiler_already_running
    from tests.support import trace_files, trace_steps

    monkeypatch.setattr(
        registry,
        "BACKENDS",
        (registry.Entry(lambda c: True, f"{__name__}:SigtermWhileOpening"),) + registry.BACKENDS,
    )
    got = []
    signal.signal(signal.SIGTERM, lambda signum, frame: got.append(signum))  # graceful: training goes on
    cfg = ProfilingConfig(output_dir=str(tmp_path), use_pytorch_profiler=True, profile_step_start=3, profile_step_end=6)
    with ProfilingController(cfg, rank=0) as ctl:
        for i in range(8):
            with ctl.step(i):
                torch.ones(4) @ torch.ones(4)
                assert not (i > 3 and profiler_already_running()), f"a profiler still records step {i}"
    assert got == [signal.SIGTERM], "delivered once, to the previous handler"
    assert not profiler_already_running()
    (trace,) = trace_files(tmp_path)[0]
    assert trace.name == "rank0_steps3-3.pt.trace.json.gz" and trace_steps(trace) == {3}
    assert "None" not in caplog.text


class SigtermWhileOpening(Backend):
    """Stand-in backend for the test above: SIGTERM arrives as the window opens."""

    name = "sigterm while opening"

    def window_begin(self, step: int) -> None:
        signal.raise_signal(signal.SIGTERM)
