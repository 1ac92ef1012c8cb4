"""The message for a trace the profiler failed to write says what happened: a full disk only when
the disk is full, a file size limit when one was reached, and "unknown" otherwise."""

from __future__ import annotations

import errno
import os
import resource
import subprocess

import pytest

from bridge_plugins.runtime.verify import KINETO_FOOTER, check_json_complete


def _error(path) -> str:
    with pytest.raises(ValueError) as e:
        check_json_complete(str(path), KINETO_FOOTER)
    return str(e.value)


def test_a_missing_file_on_a_roomy_disk_is_not_blamed_on_the_disk(tmp_path):
    msg = _error(tmp_path / "x.json")
    assert msg.startswith("the profiler wrote no file: the cause is unknown: the disk has ")
    assert "full" not in msg


def test_a_short_file_under_a_file_size_limit_names_the_limit(tmp_path):
    path = tmp_path / "x.json"
    path.write_bytes(b'{"traceEvents": [' + b" " * 5000)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (6000, hard))
    try:
        msg = _error(path)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert msg == (
        "the profiler wrote an incomplete file (5017 bytes, no closing footer): "
        "the file size limit (ulimit -f, 6000 bytes) was hit"
    )


def test_a_missing_file_is_put_down_to_the_size_limit_only_within_a_mib_of_it(tmp_path):
    """A missing file is 0 bytes written: 1 MiB + 1 byte short of this limit, so not blamed on it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, ((1 << 20) + 1, hard))
    try:
        msg = _error(tmp_path / "x.json")
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert msg.startswith("the profiler wrote no file: the cause is unknown: the disk has ")


@pytest.fixture
def tmpfs(tmp_path):
    """mount(options): a fresh tmpfs with those options (needs mount rights: skipped without them)."""
    mounted = []

    def mount(options: str):
        mnt = tmp_path / f"mnt{len(mounted)}"
        mnt.mkdir()
        if subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mnt)], capture_output=True).returncode:
            pytest.skip("cannot mount a tmpfs here")
        mounted.append(mnt)
        return mnt

    yield mount
    for mnt in mounted:
        subprocess.run(["umount", str(mnt)], check=True)


@pytest.fixture
def full_disk(tmpfs):
    """A 64 KiB tmpfs filled to the last byte."""
    mnt = tmpfs("size=64k")
    with open(mnt / "filler", "wb", buffering=0) as f, pytest.raises(OSError):
        while True:
            f.write(b"\0" * 4096)
    return mnt


def test_a_full_disk_is_named(full_disk):
    msg = _error(full_disk / "x.json")
    assert msg.startswith("the profiler wrote no file: its disk is full (")
    assert os.statvfs(full_disk).f_bavail == 0


def _free(mnt) -> int:
    st = os.statvfs(mnt)
    return st.f_bavail * st.f_frsize


def test_exactly_a_mib_free_is_not_a_full_disk_one_page_less_is(tmpfs):
    mnt = tmpfs("size=2m")
    (mnt / "filler").write_bytes(b"\0" * (1 << 20))
    assert _free(mnt) == 1 << 20
    assert _error(mnt / "x.json") == (
        "the profiler wrote no file: the cause is unknown: "
        f"the disk has {1 << 20} bytes free and no file size limit was reached"
    )
    (mnt / "page").write_bytes(b"\0")  # takes a whole 4 KiB page
    assert _error(mnt / "x.json") == f"the profiler wrote no file: its disk is full ({(1 << 20) - 4096} bytes free)"


def test_no_inode_left_is_a_full_disk_with_room_to_spare_one_left_is_not(tmpfs):
    mnt = tmpfs("size=4m,nr_inodes=8")
    with pytest.raises(OSError) as e:
        for n in range(8):
            (mnt / f"f{n}").touch()
    assert e.value.errno == errno.ENOSPC and os.statvfs(mnt).f_favail == 0
    assert _error(mnt / "x.json") == f"the profiler wrote no file: its disk is full ({4 << 20} bytes free)"
    (mnt / "f0").unlink()
    assert os.statvfs(mnt).f_favail == 1
    assert _error(mnt / "x.json").startswith("the profiler wrote no file: the cause is unknown: the disk has ")
