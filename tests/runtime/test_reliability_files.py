"""Fault injection, issues 7.2 and 7.3: a full disk never publishes a corrupt trace, and a hostile
neighbour in a shared output directory can neither redirect our writes nor hang the job."""

from __future__ import annotations

import os
import resource

import pytest

from tests.reliability import Job, complete_trace_steps

pytestmark = pytest.mark.slow  # real jobs that take seconds each: not in scripts/test.sh --quick


def limit_file_size():
    """In the job: every file it writes stops growing at 200 KB (EFBIG), as on a full disk.
    Python ignores SIGXFSZ, so the write fails instead of killing the process."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))


def test_full_disk_publishes_nothing_and_names_the_path(tmp_path):
    job = Job(tmp_path, start=1, end=4, steps=5, preexec_fn=limit_file_size)
    rc = job.finish()
    assert rc == 0, job.stderr[-3000:]  # training went on
    assert "controller exited" in job.lines
    assert job.traces() == [], "an incomplete trace was published under its final name"
    assert job.left_behind() == []  # no staging file, no uncompressed JSON in $TMPDIR
    errors = [line for line in job.stderr.splitlines() if "PyTorch trace" in line and "not written" in line]
    assert len(errors) == 1, job.stderr[-3000:]
    assert str(job.out / "torch_profile" / "rank0_steps1-3.pt.trace.json.gz") in errors[0]
    assert "the file size limit (ulimit -f, 200000 bytes) was hit" in errors[0]
    assert "disk" not in errors[0].split("not written")[1]  # the disk is not full: not what happened


OLD_TEMP_NAME = ".rank0_steps1-3.{pid}.tmp.pt.trace.json.gz"  # the predictable name of the first version


@pytest.mark.parametrize("plant", ["symlink", "fifo"])
def test_planted_temp_name_is_never_followed_or_opened(tmp_path, plant):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    job = Job(tmp_path, start=1, end=4, steps=5, ops=3000)
    pid = job.pid()
    trace_dir = job.out / "torch_profile"
    trace_dir.mkdir(parents=True, exist_ok=True)
    planted = trace_dir / OLD_TEMP_NAME.format(pid=pid)
    if plant == "symlink":
        planted.symlink_to(victim)
    else:
        os.mkfifo(planted)
    rc = job.finish(timeout=90)  # a FIFO opened for writing would block forever
    assert rc == 0, job.stderr[-3000:]
    assert victim.read_text() == "precious"
    (trace,) = job.traces()
    assert complete_trace_steps(trace) == {1, 2, 3}
    assert os.path.lexists(planted)  # the neighbour's file is not ours to remove
    planted.unlink()
    assert job.left_behind() == []


@pytest.mark.parametrize("plant", ["symlink", "fifo"])
def test_something_planted_at_the_final_name_is_never_replaced_or_opened(tmp_path, plant):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    trace_dir = tmp_path / "out" / "torch_profile"
    trace_dir.mkdir(parents=True)
    planted = trace_dir / "rank0_steps1-3.pt.trace.json.gz"
    if plant == "symlink":
        planted.symlink_to(victim)
    else:
        os.mkfifo(planted)
    job = Job(tmp_path, start=1, end=4, steps=5)
    rc = job.finish(timeout=90)
    assert rc == 0, job.stderr[-3000:]
    assert victim.read_text() == "precious"
    assert os.path.islink(planted) if plant == "symlink" else os.path.exists(planted)
    published = trace_dir / "rank0_steps1-3.1.pt.trace.json.gz"  # the next free name
    assert complete_trace_steps(published) == {1, 2, 3}


@pytest.mark.parametrize("odd", ["back\\slash", "new\nline", "both\\and\nnew"])
def test_a_path_kineto_would_rewrite_still_gets_its_trace(tmp_path, odd):
    """kineto writes ``<path>.tmp`` then renames it to the path with ``\\`` turned into ``/`` and
    newlines dropped: in such a directory the trace was lost (and blamed on a full disk)."""
    job = Job(tmp_path / odd, start=1, end=3, steps=4)
    rc = job.finish()
    assert rc == 0, job.stderr[-3000:]
    (trace,) = job.traces()
    assert trace.parent.parent == tmp_path / odd / "out"
    assert complete_trace_steps(trace) == {1, 2}
    assert job.left_behind() == []
    assert "not written" not in job.stderr


def test_full_disk_publishes_no_truncated_chakra_trace(tmp_path):
    """The Chakra execution trace is checked complete before publishing, like the PyTorch trace."""
    job = Job(tmp_path, start=1, end=4, steps=5, preexec_fn=limit_file_size, pytorch_profiler_collect_chakra=True)
    rc = job.finish()
    assert rc == 0, job.stderr[-3000:]
    published = [p for p in job.out.rglob("*.chakra.json") if not p.name.startswith(".")]
    assert published == [], "a truncated Chakra trace was published"
    assert any("Chakra" in line and "not written" in line for line in job.stderr.splitlines()), job.stderr[-3000:]
