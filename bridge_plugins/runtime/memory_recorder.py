"""torch's one CUDA memory-history recorder per process, shared by the windows that record.

A configured window and an on-demand one (``trigger --memory``) can record at the same time, and
recording is one process-wide switch: it starts with the first window and stops after the last.
torch keeps every out-of-memory observer ever attached, so one observer per process passes an OOM
to the oldest window still recording (one OOM snapshot per OOM). While windows share the
recorder, the first one's ``max_entries`` holds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import torch


class SharedRecorder:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users: list[Callable[[], None]] = []  # the OOM callbacks of the windows recording now, oldest first
        self._observing = False

    def start(self, max_entries: int, on_oom: Callable[[], None]) -> None:
        with self._lock:
            if not self._users:
                torch.cuda.memory._record_memory_history(
                    enabled="all", context="all", stacks="python", max_entries=max_entries
                )
            if not self._observing:
                torch._C._cuda_attach_out_of_memory_observer(self._on_oom)  # type: ignore[attr-defined]
                self._observing = True
            self._users.append(on_oom)

    def stop(self, on_oom: Callable[[], None]) -> None:
        """This window is done; recording stops when no other window records."""
        with self._lock:
            if on_oom not in self._users:
                return
            self._users.remove(on_oom)
            if not self._users:
                torch.cuda.memory._record_memory_history(enabled=None)

    def _on_oom(self, device, alloc, device_alloc, device_free) -> None:
        users = list(self._users)  # no lock: this runs inside the allocator, on whichever thread ran out
        if users:
            users[0]()


RECORDER = SharedRecorder()
"""The process's recorder (looked up at each call, so a test can give a fresh one)."""
