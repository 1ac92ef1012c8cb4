"""The on-demand poller's edges: its thread, how long ``stop`` waits for it, the step rate over the
last samples, what it says when writing progress fails (once per kind and errno), a request seen by
many polls, a directory that comes back. Waits are on the poller's wake-ups (an Event), bounded."""

from __future__ import annotations

import logging
import threading
import types

import pytest

from bridge_plugins import ProfilingConfig
from bridge_plugins.jobdir.on_demand import POLL_ENV, publish_request, read_progress, requests_dir
from bridge_plugins.runtime import on_demand
from bridge_plugins.runtime.on_demand import RequestPoller
from tests.runtime.poller_support import Woken, take_when_woken


def poller(tmp_path, rank, woken, world_size=2) -> RequestPoller:
    return RequestPoller(ProfilingConfig(on_demand=True), rank, world_size, tmp_path, woken.lock, woken.wake)


def errors(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]


def test_the_poller_is_a_named_daemon_thread_and_the_requests_directory_exists_from_the_start(
    tmp_path, monkeypatch, caplog
):
    monkeypatch.setenv(POLL_ENV, "0.02")
    woken = Woken()
    p = poller(tmp_path, 1, woken)
    assert p.wants_step() is False
    p.start()
    try:
        (thread,) = [t for t in threading.enumerate() if t.name == "bridge_plugins-on-demand"]
        assert thread.daemon is True  # never keeps a finished training process alive
        assert requests_dir(tmp_path).is_dir()  # made at start: a trigger finds it
    finally:
        p.stop()
    assert not thread.is_alive() and errors(caplog) == []


class StuckThread:
    """Stands in for the poller's thread: never runs (a poll stuck on a hung file system), records
    how it was made and how long ``stop`` waits for it."""

    made: list[StuckThread] = []

    def __init__(self, **kwargs) -> None:
        self.kwargs, self.joins = kwargs, []
        StuckThread.made.append(self)

    def start(self) -> None:
        pass

    def join(self, timeout=None) -> None:
        self.joins.append(timeout)


@pytest.mark.parametrize("interval, waited", [("0.02", 5.0), ("10", 20.0)])
def test_stop_waits_for_a_stuck_poll_five_seconds_or_two_intervals(tmp_path, monkeypatch, interval, waited):
    monkeypatch.setenv(POLL_ENV, interval)
    monkeypatch.setattr(StuckThread, "made", [])
    p = poller(tmp_path, 1, Woken())
    monkeypatch.setattr(on_demand, "threading", types.SimpleNamespace(Thread=StuckThread))
    p.start()
    p.stop()
    (thread,) = StuckThread.made
    assert thread.kwargs == {"target": p._poll, "args": (set(),), "name": "bridge_plugins-on-demand", "daemon": True}
    assert thread.joins == [waited]


def test_stop_without_start_marks_progress_finished_and_says_when_it_cannot(tmp_path, monkeypatch, caplog):
    poller(tmp_path / "one", 1, Woken()).stop()  # not rank 0: nothing written
    assert not (tmp_path / "one").exists()
    poller(tmp_path / "zero", 0, Woken(), world_size=3).stop()
    progress = read_progress(tmp_path / "zero")
    assert (progress.state, progress.step, progress.world_size, progress.can_record_memory) == (
        "finished",
        None,
        3,
        False,
    )

    def full(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(on_demand, "publish_progress", full)
    poller(tmp_path, 0, Woken()).stop()
    assert errors(caplog) == [
        "rank 0: writing the final on-demand progress failed ([Errno 28] No space left on device)"
    ]


def test_the_step_rate_is_over_the_last_ten_samples(tmp_path, monkeypatch):
    """Samples at steps 1..12, step s starting at s*s seconds: the rate over the last ten (steps 3..12)."""
    monkeypatch.setenv(POLL_ENV, "0.01")
    clock = {"now": 0.0}
    monkeypatch.setattr(on_demand, "time", types.SimpleNamespace(time=lambda: clock["now"]))
    woken = Woken()
    p = poller(tmp_path, 0, woken).start()
    try:
        for step in range(1, 13):
            assert woken.event.wait(10)
            woken.event.clear()
            clock["now"] = float(step * step)
            with woken.lock:  # the poller asks for the next sample under this lock: not meanwhile
                assert p.take(step) == []
                assert p.wants_step() is False
    finally:
        p.stop()
    progress = read_progress(tmp_path)
    assert (progress.state, progress.step, progress.step_time) == ("finished", 12, 144.0)
    assert progress.steps_per_s == (12 - 3) / (144.0 - 9.0)
    assert progress.can_record_memory is False  # no CUDA here, told to the trigger


def test_progress_failures_are_said_once_per_kind_and_errno(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv(POLL_ENV, "0.01")
    failures = [
        OSError(28, "No space left on device"),
        OSError(28, "No space left on device"),
        OSError(5, "Input/output error"),
        InterruptedError(5, "Input/output error"),
        ValueError("bad sample"),
        ValueError("bad sample"),
    ]
    all_raised = threading.Event()

    def publish(*args):
        if failures:
            raise failures.pop(0)
        all_raised.set()

    monkeypatch.setattr(on_demand, "publish_progress", publish)
    woken = Woken()
    p = poller(tmp_path, 0, woken).start()
    try:
        assert all_raised.wait(10)
    finally:
        p.stop()
    assert errors(caplog) == [
        "rank 0: writing on-demand progress failed (OSError: [Errno 28] No space left on device); training continues",
        "rank 0: writing on-demand progress failed (OSError: [Errno 5] Input/output error); training continues",
        "rank 0: writing on-demand progress failed (InterruptedError: [Errno 5] Input/output error); "
        "training continues",
        "rank 0: writing on-demand progress failed (ValueError: bad sample); training continues",
    ]


def test_a_request_is_queued_once_however_many_polls_see_it(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv(POLL_ENV, "0.01")
    woken = Woken()
    p = poller(tmp_path, 0, woken).start()
    try:
        bad = requests_dir(tmp_path) / "bad.json"
        bad.write_text("{}")
        request = publish_request(tmp_path, 10, 12, [], False)
        assert take_when_woken(p, woken, 3, 1) == [request]
        for _ in range(3):  # three more polls, each waking rank 0 for a sample: nothing queued again
            woken.event.clear()
            assert woken.event.wait(10)
            assert p.take(4) == []
    finally:
        p.stop()
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"rank 0: on-demand request ignored: {bad}: not a request file name (<id>.json)"
    ]


def test_a_directory_unusable_at_start_is_polled_again_when_it_comes_back(tmp_path, monkeypatch):
    monkeypatch.setenv(POLL_ENV, "0.01")
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "out"
    woken = Woken()
    p = poller(out, 1, woken).start()  # logged; the poller runs on
    try:
        (tmp_path / "file").unlink()
        request = publish_request(out, 7, 8, [], False)
        assert take_when_woken(p, woken, 3, 1) == [request]
    finally:
        p.stop()
