"""part_file.py: a range worker's part through a memory file, the same part as the pipe carries."""

from __future__ import annotations

import mmap
import os
import pickle
from array import array

import numpy as np
import pytest

from bridge_plugins.analysis.trace import part_file


def _memfd_here() -> bool:
    fd = part_file.new_file()
    if fd >= 0:
        os.close(fd)
    return fd >= 0


pytestmark = pytest.mark.skipif(not _memfd_here(), reason="no memfd here")


@pytest.fixture
def fd():
    fd = part_file.new_file()
    yield fd
    os.close(fd)


def _part() -> dict:
    return {
        "header": {"schemaVersion": 1},
        "gpu_ts": array("d", [1.5, float("nan"), -0.0, 1e300]),
        "gpu_name": array("i", [0, 7, -1]),
        "gpu_cat": array("b", [3, 0]),
        "empty": array("q"),
        "tails": {(4037, 23695): (array("d", range(1000)), array("d"), array("i", [2] * 1000))},
        "names": ["ncclKernel", "aten::mm"],
    }


def _as_sent(back):
    """What loads gave back with each array view turned back into the ``array`` it was sent as."""
    if isinstance(back, np.ndarray):
        typecode = next(t for t in "bihqd" if np.dtype(t) == back.dtype)
        return array(typecode, back.tobytes())
    if isinstance(back, dict):
        return {k: _as_sent(v) for k, v in back.items()}
    if isinstance(back, (list, tuple)):
        return type(back)(_as_sent(v) for v in back)
    return back


def test_a_part_comes_back_whole_its_arrays_through_the_file(fd):
    part = _part()
    data = part_file.dumps(part, fd)
    assert len(data) < 1000 < os.fstat(fd).st_size  # the arrays' bytes went to the file, not the pickle
    back = part_file.loads(data, fd)
    assert pickle.dumps(_as_sent(back)) == pickle.dumps(part)  # the same values, types and order; NaN too
    ts, empty, ids = back["tails"][4037, 23695]
    assert [(type(a), a.dtype.itemsize) for a in (ts, ids)] == [(np.ndarray, 8), (np.ndarray, 4)]
    assert all(isinstance(a.base.obj, mmap.mmap) and not a.flags.writeable for a in (ts, ids))  # the file mapped
    assert type(empty) is type(back["empty"]) is array  # an empty one travels in the pickle


def test_a_part_without_an_array_of_any_length_needs_no_file(fd):
    part = {"events": 3, "empty": array("d")}
    assert pickle.dumps(part_file.loads(part_file.dumps(part, fd), fd)) == pickle.dumps(part)
    assert os.fstat(fd).st_size == 0


def test_a_file_that_cannot_be_written_or_is_shorter_than_its_pickle_says_raises_oserror(fd, tmp_path):
    read_only = os.open(tmp_path / "x", os.O_RDONLY | os.O_CREAT)
    try:
        with pytest.raises(OSError):
            part_file.dumps(_part(), read_only)
    finally:
        os.close(read_only)
    data = part_file.dumps(_part(), fd)
    os.ftruncate(fd, os.fstat(fd).st_size - 8)
    with pytest.raises(OSError, match="ends"):
        part_file.loads(data, fd)


def test_the_file_holds_exactly_the_arrays_bytes_one_after_the_other(fd):
    part = _part()
    part_file.dumps(part, fd)
    arrays = [part[k] for k in ("gpu_ts", "gpu_name", "gpu_cat")] + [a for t in part["tails"].values() for a in t]
    assert os.fstat(fd).st_size == sum(len(a) * a.itemsize for a in arrays)
    assert os.pread(fd, 8, 0) == part["gpu_ts"][:1].tobytes()  # from offset 0, in the order pickled


def test_a_short_write_is_written_on_from_where_it_stopped(fd, monkeypatch):
    """``os.pwrite`` may write less than asked: the rest goes after it, at its offset."""
    real = os.pwrite
    monkeypatch.setattr(part_file.os, "pwrite", lambda f, data, at: real(f, bytes(data)[:1000], at))
    part = _part()
    back = part_file.loads(part_file.dumps(part, fd), fd)
    assert pickle.dumps(_as_sent(back)) == pickle.dumps(part)


def test_the_memory_file_is_closed_on_exec_and_named_for_what_it_holds(fd):
    import fcntl

    assert fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC  # a program the command runs (nsys) gets none
    assert os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:bridge-plugins-part")


def test_no_memory_file_where_none_can_be_made(monkeypatch):
    def refused(*args):
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(part_file.os, "memfd_create", refused)
    assert part_file.new_file() == -1
    monkeypatch.delattr(part_file.os, "memfd_create")
    assert part_file.new_file() == -1
