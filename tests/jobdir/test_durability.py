"""Durability of the one atomic write: the file is fsynced before any name points at it, the directory
after the name is made, on every durable path (replace, link, the rename fallback), and nothing is
fsynced when durability is off. The real calls are logged in order (tests/durability.py)."""

from __future__ import annotations

import errno
import os

import pytest

from bridge_plugins.jobdir.atomic_write import StagedFile, write_text_atomically
from bridge_plugins.jobdir.on_demand import new_progress, progress_path, publish_request, requests_dir, write_progress
from tests.durability import Publish, install


@pytest.mark.parametrize("replace", [True, False], ids=["replace", "new name"])
def test_a_durable_write_fsyncs_the_file_then_publishes_then_fsyncs_the_directory(tmp_path, monkeypatch, replace):
    log = install(monkeypatch)
    final = write_text_atomically(tmp_path / "out.json", "{}", replace=replace)
    assert log.calls == log.expected(final)
    assert log.calls[1] == Publish("replace" if replace else "link", tmp_path / "out.json")


def test_the_first_free_name_is_the_one_made_durable(tmp_path, monkeypatch):
    (tmp_path / "t.json").write_text("taken")
    log = install(monkeypatch)
    with StagedFile(tmp_path, "t", ".json") as staged:
        staged.write_text("mine")
        final = staged.publish(tmp_path / n for n in ("t.json", "t.1.json"))
    assert final == tmp_path / "t.1.json" and log.calls == log.expected(final)


def test_without_hard_links_the_renamed_file_is_made_durable(tmp_path, monkeypatch):
    log = install(monkeypatch)

    def no_hard_links(src, dst, **kwargs):
        """Stand-in for a file system without hard links (vfat): os.link fails with EPERM."""
        raise PermissionError(errno.EPERM, os.strerror(errno.EPERM))

    monkeypatch.setattr(os, "link", no_hard_links)
    final = write_text_atomically(tmp_path / "out.json", "{}", replace=False)
    assert log.calls == log.expected(final) and log.calls[1] == Publish("rename", final)


@pytest.mark.parametrize("replace", [True, False], ids=["replace", "new name"])
def test_nothing_is_fsynced_when_durability_is_off(tmp_path, monkeypatch, replace):
    log = install(monkeypatch)
    final = write_text_atomically(tmp_path / "out.json", "{}", replace=replace, durable=False)
    assert log.calls == [Publish("replace" if replace else "link", final)]


def test_a_request_is_durable_and_the_progress_file_is_not(tmp_path, monkeypatch):
    """The trigger's request must survive a crash (the job acts on it later); progress.json is
    rewritten every poll and worthless after one."""
    log = install(monkeypatch)
    publish_request(tmp_path, 10, 12, [0], memory=False)
    assert log.calls == log.expected(requests_dir(tmp_path) / "1.json")
    log.calls.clear()
    write_progress(
        tmp_path,
        new_progress(state="running", step=3, step_time=None, steps_per_s=None, poll_interval_s=1.0, world_size=1),
    )
    assert log.calls == [Publish("replace", progress_path(tmp_path))]


def _fsync_fails_on_directories(err: int):  # type: ignore[no-untyped-def]
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        """Stand-in for a file system whose directories cannot be fsynced (some FUSE and network
        file systems answer EINVAL), or a disk that fails (EIO)."""
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            raise OSError(err, os.strerror(err))
        real_fsync(fd)

    return fsync


def test_a_directory_that_cannot_be_fsynced_still_publishes(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "fsync", _fsync_fails_on_directories(errno.EINVAL))
    assert write_text_atomically(tmp_path / "out.json", "{}", replace=False).read_text() == "{}"


def test_a_failing_directory_fsync_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "fsync", _fsync_fails_on_directories(errno.EIO))
    with pytest.raises(OSError) as e:
        write_text_atomically(tmp_path / "out.json", "{}", replace=False)
    assert e.value.errno == errno.EIO
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # published, but not known durable
