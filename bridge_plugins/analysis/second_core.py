"""Part of one trace's analyses in a forked child while this process computes the rest: where the
trace was read on several cores, its analyses take two as well (issue 32; chrome.py says which part).

The child sends its result back pickled through a pipe. A child that fails in any way (an error,
a signal, a result that does not arrive whole) costs time, not the output: the part runs here
instead. Forked only on Linux, from a process with no other thread, and never for a trace read
in one process (split.py decides that from the cores free).
"""

from __future__ import annotations

import atexit
import gc
import os
import pickle
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

from bridge_plugins.analysis.parallel import FORKS

T = TypeVar("T")


class Part(Generic[T]):
    """``fn()``'s result, from the child forked for it or, failing that, computed here."""

    def __init__(self, fn: Callable[[], T]) -> None:
        self.fn = fn
        self.pid: int | None = None
        self.fd = -1

    def fork(self) -> None:
        """Start the child (the caller checked :func:`can_fork`)."""
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child: coverage does not follow it, its result is tested
            os.close(r)
            _child(self.fn, w)
        os.close(w)
        self.pid, self.fd = pid, r

    def result(self) -> T:
        """The child's result where it sent all of it, else ``fn()`` here. A child that sent it is
        left to end on its own (:data:`EXITING`); one that did not is waited for first."""
        if self.pid is None:
            return self.fn()
        with open(self.fd, "rb") as pipe:
            self.fd = -1
            data = pipe.read()
        pid, self.pid = self.pid, None
        sent = whole(data)
        if sent is None:  # it failed, was killed or exited before it had written all
            os.waitpid(pid, 0)
            return self.fn()
        EXITING.append(pid)
        reap_exiting(block=False)
        return pickle.loads(sent)

    def stop(self) -> None:
        """The child killed and waited for, if still there (this process is leaving on an error)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.pid is not None:
            os.kill(self.pid, signal.SIGKILL)  # not yet waited for: it is there, if only as a zombie
            os.waitpid(self.pid, 0)
            self.pid = None


class Claim:
    """A piece of work that either process may do, whichever reaches it first (the analyses' parts
    take different times on different traces): a pipe holding one byte, made before the fork and
    with its write end closed, so that the first :meth:`take` reads the byte and every later one,
    in either process, reads the end (a pipe's reads are atomic: never both). A context manager:
    closed on the way out (the child leaves with ``os._exit``, which closes it there)."""

    def __init__(self) -> None:
        self.fd, w = os.pipe()
        try:
            os.write(w, b"1")
        finally:
            os.close(w)

    def take(self) -> bool:
        """True for the first caller in either process, False for every other."""
        return os.read(self.fd, 1) == b"1"

    def __enter__(self) -> Claim:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


EXITING: list[int] = []
"""Children that sent their result, not yet reaped: their exit (unmapping what they wrote) takes
~5 ms that the analyses need not wait for. Reaped at the next fork, and when this process exits."""


def reap_exiting(block: bool) -> None:
    """Reap the children in :data:`EXITING` that have ended (``block``: every one, waiting)."""
    for pid in list(EXITING):
        try:
            ended = os.waitpid(pid, 0 if block else os.WNOHANG)[0] == pid
        except ChildProcessError:  # reaped already (a caller's waitpid(-1))
            ended = True
        if ended:
            EXITING.remove(pid)


atexit.register(reap_exiting, True)
_LENGTH = 8  # bytes of the length that heads a child's result


def whole(data: bytes) -> bytes | None:
    """The pickled result in what a child sent (its length, then it), or None if not all came."""
    if len(data) <= _LENGTH or int.from_bytes(data[:_LENGTH], "little") != len(data) - _LENGTH:
        return None  # a pickle is never empty
    return data[_LENGTH:]


def _child(fn: Callable[[], T], w: int) -> None:  # pragma: no cover - runs in the child
    """Compute ``fn()``, write it pickled to ``w`` and leave with 0; 1 on any error. ``os._exit``:
    no buffer of the parent's (stdout, a file) is flushed a second time, no atexit handler runs."""
    code = 1
    try:
        gc.disable()  # short-lived: collections would only copy the parent's pages
        data = pickle.dumps(fn(), protocol=pickle.HIGHEST_PROTOCOL)
        with open(w, "wb") as pipe:
            pipe.write(len(data).to_bytes(_LENGTH, "little"))
            pipe.write(data)
        code = 0
    finally:
        os._exit(code)


def can_fork() -> bool:
    """A child can be forked safely here: Linux, and no other thread (whose locks it would inherit held)."""
    return FORKS and threading.active_count() == 1


@contextmanager
def part(fn: Callable[[], T], fork: bool) -> Iterator[Part[T]]:
    """``fn``'s :class:`Part`: in a forked child where ``fork`` and :func:`can_fork`, else computed
    here when its result is asked for. The child is killed if the block leaves on an error."""
    p = Part(fn)
    if fork and can_fork():
        reap_exiting(block=True)  # an earlier trace's child, long ended
        p.fork()
    try:
        yield p
    finally:
        p.stop()
