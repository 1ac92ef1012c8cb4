"""The controller's side of the on-demand poller in tests: a lock, and a wake-up the test waits on."""

from __future__ import annotations

import threading

from bridge_plugins.jobdir.on_demand import Request
from bridge_plugins.runtime.on_demand import RequestPoller


class Woken:
    """The controller's side: a lock, and ``wake`` that sets an Event the test waits on."""

    def __init__(self) -> None:
        self.lock, self.event = threading.RLock(), threading.Event()

    def wake(self) -> None:
        assert self.lock._is_owned()  # the poller calls wake() with the controller's lock held
        self.event.set()


def take_when_woken(poller: RequestPoller, woken: Woken, step: int, want: int) -> list[Request]:
    """Take what the poller queued at each wake-up until ``want`` requests came (10 s at most)."""
    taken: list[Request] = []
    while len(taken) < want:
        assert woken.event.wait(10), taken
        woken.event.clear()
        taken += poller.take(step)
    return taken
