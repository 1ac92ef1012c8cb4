"""part_file.py: a range worker's part through a memory file, the same part as the pipe carries."""

from __future__ import annotations

import os
import pickle
from array import array

import pytest

from bridge_plugins.analysis.trace import part_file

pytestmark = pytest.mark.skipif(part_file.new_file() < 0, reason="no memfd here")


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


def test_a_part_comes_back_whole_its_arrays_through_the_file(fd):
    part = _part()
    data = part_file.dumps(part, fd)
    assert len(data) < 1000 < os.fstat(fd).st_size  # the arrays' bytes went to the file, not the pickle
    back = part_file.loads(data, fd)
    assert pickle.dumps(back) == pickle.dumps(part)  # the same values, typecodes and order; NaN too
    assert [type(a) for a in back["tails"][4037, 23695]] == [array] * 3


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
