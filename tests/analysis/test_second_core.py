"""second_core.py: part of a trace's analyses in a forked child, its result the same as computed here
whatever becomes of the child; and the spill files both processes read at once."""

from __future__ import annotations

import os
import signal
import threading
from array import array

import numpy as np
import pytest

from bridge_plugins.analysis import second_core
from bridge_plugins.analysis.trace.spill import Spill
from tests.analysis.hostile_inputs import JOB2

pytestmark = pytest.mark.skipif(not second_core.FORKS, reason="forks on Linux only")


def _pid_and(value: int) -> tuple[int, int]:
    return os.getpid(), value


def test_a_forked_part_is_computed_in_the_child_and_comes_back_whole():
    big = list(range(300_000))  # a result larger than a pipe's buffer
    with second_core.part(lambda: (os.getpid(), big), fork=True) as p:
        assert p.pid is not None
        pid, value = p.result()
        assert p.pid is None and p.fd == -1  # waited for, its pipe closed: nothing left for stop()
    assert pid not in (os.getpid(), None) and value == big
    assert p.pid is None and p.fd == -1


def test_a_child_that_sent_its_result_is_reaped_by_the_next_fork_at_the_latest():
    """Its exit is not waited for as its result is read (second_core.EXITING), but it is no zombie
    for long: the next part's fork reaps it first (and this process's exit, with atexit)."""
    with second_core.part(lambda: os.getpid(), fork=True) as p:
        child = p.result()
    assert child != os.getpid() and set(second_core.EXITING) <= {child}
    with second_core.part(lambda: os.getpid(), fork=True) as p:
        assert second_core.EXITING == []  # reaped before this fork
        with pytest.raises(ChildProcessError):
            os.waitpid(child, os.WNOHANG)
        second = p.result()
    second_core.reap_exiting(block=True)
    assert second_core.EXITING == []
    with pytest.raises(ChildProcessError):
        os.waitpid(second, os.WNOHANG)


@pytest.mark.parametrize(
    ("sent", "whole"),
    [
        ((3).to_bytes(8, "little") + b"abc", b"abc"),
        ((4).to_bytes(8, "little") + b"abc", None),  # cut short
        ((2).to_bytes(8, "little") + b"abc", None),  # more than it said
        ((0).to_bytes(8, "little"), None),  # no pickle is empty
        (b"", None),  # nothing sent
        (b"\x03\x00", None),  # the length itself cut short
    ],
)
def test_a_result_is_taken_only_where_all_of_it_came(sent, whole):
    assert second_core.whole(sent) == whole


def test_not_forked_the_part_is_computed_here_when_asked():
    calls = []
    with second_core.part(lambda: calls.append(1) or os.getpid(), fork=False) as p:
        assert p.pid is None and p.fd == -1 and calls == []  # no pipe: stop() closes nothing
        assert p.result() == os.getpid()
    assert calls == [1]


def _only_here(what):
    """A part that fails in any process but this one, by ``what``."""
    parent = os.getpid()

    def fn() -> tuple[int, int]:
        if os.getpid() != parent:
            what()
        return _pid_and(7)

    return fn


def _raise():
    raise MemoryError


def _killed():
    os.kill(os.getpid(), signal.SIGKILL)


def _exits_early():
    os._exit(0)  # 0, with nothing written


@pytest.mark.parametrize("what", [_raise, _killed, _exits_early, lambda: os._exit(3)])
def test_a_child_that_fails_leaves_the_part_to_this_process(what):
    with second_core.part(_only_here(what), fork=True) as p:
        assert p.pid is not None
        assert p.result() == (os.getpid(), 7)


def test_a_block_left_on_an_error_kills_and_reaps_its_child():
    r, w = os.pipe()
    with pytest.raises(KeyboardInterrupt), second_core.part(lambda: os.read(r, 1), fork=True) as p:
        pid = p.pid
        raise KeyboardInterrupt
    os.close(w)
    os.close(r)
    assert p.pid is None
    with pytest.raises(ChildProcessError):  # waited for already: no zombie left
        os.waitpid(pid, os.WNOHANG)


def test_no_fork_beside_another_thread():
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        with second_core.part(lambda: os.getpid(), fork=True) as p:
            assert p.pid is None
            assert p.result() == os.getpid()
    finally:
        stop.set()
        t.join()


def test_a_spill_is_on_disk_once_written_and_read_without_moving_the_file_offset():
    s = Spill()
    cols = (array("d", [1.0, 2.0, 3.0]), array("i", [4, 5, 6]))
    s.write(cols)
    fd = s._file.fileno()
    assert os.fstat(fd).st_size == 3 * 8 + 3 * 4  # flushed: nothing a fork could write twice
    cols[0].extend([9.0])
    cols[1].extend([10])
    s.write(cols)
    offset = os.lseek(fd, 0, os.SEEK_CUR)
    tail = (array("d", [11.0]), array("i", [12]))
    ts, ids = s.read(tail)
    assert ts.tolist() == [1.0, 2.0, 3.0, 9.0, 11.0] and ids.tolist() == [4, 5, 6, 10, 12]
    assert [[c.tolist() for c in b] for b in s.blocks(tail, (1,))] == [[[4, 5, 6]], [[10]], [[12]]]
    assert os.lseek(fd, 0, os.SEEK_CUR) == offset
    s.close()


def test_a_spill_read_in_a_child_and_here_at_once_gives_both_the_same():
    s = Spill()
    values = np.arange(200_000, dtype=np.float64)
    for part in np.array_split(values, 4):
        s.write((array("d", part.tobytes()),))
    with second_core.part(lambda: s.read((array("d"),))[0].sum(), fork=True) as p:
        here = s.read((array("d"),))[0].sum()
        assert p.result() == here == values.sum()
    s.close()


def test_a_traces_entry_is_the_same_from_its_child_from_a_failed_child_and_from_one_process(monkeypatch):
    """chrome.py: forked, the child joins the GPU events to their launches itself (this process has
    not yet); a child that fails leaves its part to this process, whose join took the collector's
    columns: it must use that join, not join the emptied columns again."""
    if not JOB2.exists():
        pytest.skip("needs the shared GPU trace fixtures")
    forks: list[int] = []
    real_fork = second_core.Part.fork

    def fork(self):
        real_fork(self)
        forks.append(self.pid)

    monkeypatch.setattr(second_core.Part, "fork", fork)

    one = _entry(1)
    assert forks == []
    assert _entry(2) == one and len(forks) == 1
    monkeypatch.setattr(second_core, "_child", lambda fn, w: os._exit(1))
    assert _entry(2) == one and len(forks) == 2
    assert '"attribution": {' in one and '"launches": {' in one  # the child's part is in it


def test_a_claim_goes_to_exactly_one_process_whichever_asks_first():
    """Second_core.Claim: the first take in either process gets it, every later one does not."""
    for first_here in (True, False):
        with second_core.Claim() as claim:
            to_child, to_parent = os.pipe(), os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child
                if first_here:
                    os.read(to_child[0], 1)  # it asks once the parent has
                os.write(to_parent[1], b"1" if claim.take() else b"0")
                os._exit(0)
            if first_here:
                here = claim.take()
                os.write(to_child[1], b"1")
                child = os.read(to_parent[0], 1)
            else:
                child = os.read(to_parent[0], 1)
                here = claim.take()
            os.waitpid(pid, 0)
            for fd in (*to_child, *to_parent):
                os.close(fd)
            assert (here, child) == ((True, b"0") if first_here else (False, b"1"))
            assert not claim.take()  # and nobody after
        assert claim.fd == -1


def _entry(read_on: int) -> str:
    """JOB2's trace entry as JSON, its analyses forked where ``read_on`` > 1 (chrome.py)."""
    from bridge_plugins.analysis import chrome
    from bridge_plugins.analysis.jsonable import dumps
    from bridge_plugins.analysis.trace.split import collect_trace

    d = collect_trace(JOB2, 1)
    d.spill_rest()
    d.read_on = read_on
    return dumps(chrome._analyzed(d, JOB2))


class _ChildFirst(second_core.Claim):
    """A claim the forked child always reaches first: the parent's take waits until the child has
    asked (or has ended), on a pipe, not a clock."""

    def __init__(self) -> None:
        super().__init__()
        self.parent = os.getpid()
        self.asked_r, self.asked_w = os.pipe()

    def take(self) -> bool:
        if os.getpid() != self.parent:  # the child
            got = super().take()
            os.write(self.asked_w, b"1")
            return got
        if self.asked_w >= 0:
            os.close(self.asked_w)  # the child's copy stays open until it has asked or ended
            self.asked_w = -1
            os.read(self.asked_r, 1)
        return super().take()


@pytest.mark.parametrize("child_fails", [False, True])
def test_the_operator_table_is_the_same_made_by_the_child_or_here(child_fails, monkeypatch):
    """chrome.py's operator table goes to whichever process reaches it first: the child's (it
    claimed it) is the table this process makes; a child that claimed it and then failed leaves
    it to this process, which makes it after all."""
    from bridge_plugins.analysis.analyzers import op_tables

    if not JOB2.exists():
        pytest.skip("needs the shared GPU trace fixtures")

    one = _entry(1)
    made_in: list[int] = []
    real_cpu_ops = op_tables.cpu_ops
    parent = os.getpid()

    def cpu_ops(d):
        if os.getpid() != parent and child_fails:
            raise RuntimeError("the child fails after claiming the table")
        made_in.append(os.getpid())
        return real_cpu_ops(d)

    monkeypatch.setattr(op_tables, "cpu_ops", cpu_ops)
    monkeypatch.setattr(second_core, "Claim", _ChildFirst)
    assert _entry(2) == one
    # made in the child (its appends are not seen here), or, where it failed, here after all
    assert made_in == ([parent] if child_fails else [])
