"""The message for a trace the profiler failed to write says what happened: a full disk only when
the disk is full, a file size limit when one was reached, and "unknown" otherwise."""

from __future__ import annotations

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


@pytest.fixture
def full_disk(tmp_path):
    """A 64 KiB tmpfs filled to the last byte (needs mount rights: skipped without them)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        with open(mnt / "filler", "wb", buffering=0) as f, pytest.raises(OSError):
            while True:
                f.write(b"\0" * 4096)
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_a_full_disk_is_named(full_disk):
    msg = _error(full_disk / "x.json")
    assert msg.startswith("the profiler wrote no file: its disk is full (")
    assert os.statvfs(full_disk).f_bavail == 0
