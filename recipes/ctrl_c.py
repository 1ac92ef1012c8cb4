"""Ctrl-C in the main job stops the job, and what its profiler captured is still summarized.

NeMo Run starts a local job in a session of its own, so a terminal's Ctrl-C reaches only this
driver. The first Ctrl-C cancels the job through NeMo Run (``Experiment.cancel``: SIGTERM, or
``scancel`` on Slurm), so each profiled rank writes what its window captured; the main job then
prints the summary and exits 130. A second Ctrl-C skips the summary. Started with Ctrl-C ignored
(``cmd &`` in a script), it keeps ignoring it; SIGTERM (``kill PID``) then stops it the same way
(exit 143).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def exit_interrupted(*_signal_args) -> None:
    """One line, exit 130, at once: no exception travels through the code that was interrupted."""
    os.write(2, b"\n[recipes] interrupted (Ctrl-C)\n")  # not print: this may interrupt a print
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, RuntimeError, ValueError):  # RuntimeError: it was mid-write
            stream.flush()
    os._exit(130)


def exit_on_ctrl_c() -> None:
    """Until the launch, a Ctrl-C ends the main job where it lands.

    Nothing runs yet that needs stopping, and a KeyboardInterrupt raised into an import may come
    out as something else (Python 3.11 turns one raised while a class is built, as NeMo Run's
    dataclasses are, into a RuntimeError). Started with Ctrl-C ignored, it stays ignored."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, exit_interrupted)


STOP_SIGNALS = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM"}
"""What stops the job, by the name the user knows it by. SIGTERM (``kill PID``) is how a main job
started with ``&`` in a script is stopped, since it ignores Ctrl-C; left to its default it would end
the main job alone, and the job, in a session of its own, would run on."""


@contextmanager
def cancel_on_ctrl_c(exp, job_id: str) -> Iterator[Callable[[], int]]:
    """While inside, Ctrl-C or SIGTERM cancels ``job_id`` of ``exp``; yields "which signal stopped
    it" (0: none). A signal the main job was started with ignored (Ctrl-C under ``cmd &``) stays ignored."""
    received: list[int] = []

    def cancel() -> None:
        exp.cancel(job_id)  # a job not launched yet has no handle: the caller cancels again after launch

    def on_signal(signum, frame) -> None:
        if received:
            signal.default_int_handler(signum, frame)  # the second: KeyboardInterrupt
        received.append(signum)
        name = STOP_SIGNALS[signal.Signals(signum)]
        print(
            f"\n[recipes] {name}: stopping the job (SIGTERM: each profiled rank writes what it captured); "
            f"{name} again to skip the summary",
            file=sys.stderr,
            flush=True,
        )
        # not in the handler: cancelling waits up to 10 s for the job's processes
        threading.Thread(target=cancel, name="recipes-cancel", daemon=True).start()

    previous = {s: signal.signal(s, on_signal) for s in STOP_SIGNALS if signal.getsignal(s) is not signal.SIG_IGN}
    try:
        yield lambda: received[0] if received else 0
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
