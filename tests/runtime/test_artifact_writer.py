"""ArtifactWriter and the completeness checks, on real files in a temporary directory: what is
published under which name, what a failure leaves (nothing) and says (the file and the cause).
Fast, so that mutation testing (scripts/mutation.sh artifacts) runs it for every mutant; the
profiler-driven cases (full disks, planted files, kineto's paths) are in test_reliability_files.py."""

from __future__ import annotations

import errno
import gzip
import logging
import os
import resource
import time

import pytest

from bridge_plugins.jobdir.own_dirs import UnsafeDirectoryError
from bridge_plugins.runtime.artifacts import ArtifactError, ArtifactWriter, human_size
from bridge_plugins.runtime.verify import (
    EXECUTION_TRACE_FOOTER,
    KINETO_FOOTER,
    LOW_SPACE,
    check_gzip_complete,
    check_json_complete,
    check_kineto_header,
    gzip_file,
    write_failure_cause,
)

TRACE = b'{"schemaVersion": 1, "traceEvents": [{"ph": "X"}], "traceName": "t.json"}\n'


def writes(data: bytes):
    def produce(path: str) -> None:
        with open(path, "wb") as f:
            f.write(data)

    return produce


def entries(directory) -> list[str]:
    return sorted(os.listdir(directory))


def test_write_publishes_the_checked_file_under_its_name_and_leaves_nothing_else(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="bridge_plugins")
    writer = ArtifactWriter(tmp_path)
    checked = []
    before = time.perf_counter()
    final = writer.write("trace", tmp_path / "d", "rank0", ".json", writes(TRACE), checked.append)
    took = time.perf_counter() - before
    assert final == tmp_path / "d" / "rank0.json" and final.read_bytes() == TRACE
    assert writer.paths == [final] and entries(tmp_path / "d") == ["rank0.json"]  # the staging dir is gone
    assert len(checked) == 1 and os.path.basename(checked[0]) == ".partial.json"  # checked before publishing
    [message] = [r.getMessage() for r in caplog.records]
    assert message.startswith(f"wrote trace {final} ({len(TRACE)} B) in ") and message.endswith(" s")
    assert 0 <= float(message.rsplit(" in ", 1)[1].removesuffix(" s")) <= took + 0.005  # %.2f rounds up by 0.005


def test_a_taken_name_gets_the_next_number_and_is_never_replaced(tmp_path):
    writer = ArtifactWriter(tmp_path)
    (tmp_path / "rank0.json").write_bytes(b"old")
    (tmp_path / "rank0.1.json").symlink_to(tmp_path / "nowhere")  # dangling: still taken
    first = writer.write("trace", tmp_path, "rank0", ".json", writes(b"a"))
    second = writer.write("trace", tmp_path, "rank0", ".json", writes(b"b"))
    assert (first.name, second.name) == ("rank0.2.json", "rank0.3.json")
    assert (tmp_path / "rank0.json").read_bytes() == b"old" and (tmp_path / "rank0.1.json").is_symlink()
    assert writer.paths == [first, second] and second.read_bytes() == b"b"


def test_after_ten_thousand_taken_names_nothing_is_published_and_the_error_says_so(tmp_path):
    writer = ArtifactWriter(tmp_path)
    (tmp_path / "rank0.json").write_bytes(b"old")
    for n in range(1, 10_000):  # rank0.1.json .. rank0.9999.json: hard links, to be quick
        os.link(tmp_path / "rank0.json", tmp_path / f"rank0.{n}.json")
    with pytest.raises(ArtifactError) as e:
        writer.write("trace", tmp_path, "rank0", ".json", writes(TRACE))
    assert str(e.value) == (
        f"trace {tmp_path / 'rank0.json'} was not written: no free name for rank0.json in {tmp_path}"
    )
    assert len(entries(tmp_path)) == 10_000 and not (tmp_path / "rank0.10000.json").exists()
    assert writer.paths == []


def test_a_directory_moved_away_before_publishing_is_not_made_again(tmp_path):
    """Someone moves the directory away while the window records: publish finds it gone, publishes
    nothing and does not make an empty one again."""
    writer = ArtifactWriter(tmp_path)
    directory = tmp_path / "traces"
    staged = writer.stage("trace", directory, "rank0", ".json")

    def moved_away(path):
        os.rename(directory, tmp_path / "moved")

    with pytest.raises(ArtifactError) as e:
        writer.publish("trace", staged, directory, "rank0", ".json", writes(TRACE), moved_away)
    assert str(e.value) == (
        f"trace {directory / 'rank0.json'} was not written: "
        f"FileNotFoundError: [Errno 2] No such file or directory: '{directory}'"
    )
    assert entries(tmp_path) == ["moved"] and writer.paths == []


def test_a_failed_produce_publishes_nothing_and_names_the_file_and_cause(tmp_path):
    writer = ArtifactWriter(tmp_path)

    def full_disk(path):
        writes(b"partial")(path)
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(ArtifactError) as e:
        writer.write("PyTorch trace", tmp_path, "rank0", ".json", full_disk)
    assert str(e.value) == (
        f"PyTorch trace {tmp_path / 'rank0.json'} was not written: OSError: [Errno 28] No space left on device"
    )
    assert writer.paths == [] and entries(tmp_path) == []


def test_a_failed_check_publishes_nothing_and_says_why(tmp_path):
    writer = ArtifactWriter(tmp_path)

    def incomplete(path):
        raise ValueError("the profiler wrote an incomplete file")

    with pytest.raises(
        ArtifactError, match=r"^trace .*rank0\.json was not written: ValueError: the profiler wrote an "
    ):
        writer.write("trace", tmp_path, "rank0", ".json", writes(TRACE), incomplete)
    assert writer.paths == [] and entries(tmp_path) == []


def test_something_not_a_regular_file_is_not_published(tmp_path):
    writer = ArtifactWriter(tmp_path)
    with pytest.raises(ArtifactError, match=r"\.partial\.json is not a regular file$"):
        writer.write("trace", tmp_path, "rank0", ".json", os.mkdir)
    assert entries(tmp_path) == []


def test_an_interrupt_is_logged_and_goes_on(tmp_path, caplog):
    writer = ArtifactWriter(tmp_path)

    def interrupted(path):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        writer.write("trace", tmp_path, "rank0", ".json", interrupted)
    assert f"trace {tmp_path / 'rank0.json'} was not written: interrupted by KeyboardInterrupt" in caplog.text
    assert entries(tmp_path) == []


def test_a_symlinked_directory_below_the_root_is_refused(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "traces").symlink_to(tmp_path / "elsewhere")
    writer = ArtifactWriter(tmp_path / "out")
    with pytest.raises(ArtifactError, match=r"traces/rank0\.json was not written: .*is a symlink") as e:
        writer.write("trace", tmp_path / "out" / "traces", "rank0", ".json", writes(TRACE))
    assert isinstance(e.value.__cause__, UnsafeDirectoryError)
    assert entries(tmp_path / "elsewhere") == []


def test_stage_then_publish_makes_the_missing_directory_and_removes_the_staging(tmp_path):
    writer = ArtifactWriter(tmp_path)
    staging = writer.stage("trace", tmp_path / "a" / "b", "rank0", ".json")
    private = staging.staging  # the private directory the file is written in
    assert private.parent == tmp_path / "a" / "b" and private.name.startswith(".rank0.")
    assert private.name.endswith(".tmp")
    assert oct(private.stat().st_mode & 0o777) == "0o700"
    final = writer.publish("trace", staging, tmp_path / "a" / "b", "rank0", ".json", writes(TRACE))
    assert entries(tmp_path / "a" / "b") == ["rank0.json"] and final.read_bytes() == TRACE
    assert not private.exists()


@pytest.mark.parametrize(
    "n,text",
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (1536, "1.5 KiB"),
        (1024**2 - 1, "1024.0 KiB"),
        (5 * 1024**2, "5.0 MiB"),
        (3 * 1024**3, "3.0 GiB"),
        (2048 * 1024**3, "2048.0 GiB"),
    ],
)
def test_human_size(n, text):
    assert human_size(n) == text


# ----------------------------------------------------------------------------- verify
def test_a_complete_trace_passes_and_a_truncated_one_says_its_size(tmp_path):
    path = tmp_path / "t.json"
    path.write_bytes(b"   " + TRACE)
    check_json_complete(str(path), KINETO_FOOTER)
    path.write_bytes(TRACE[:-20])
    with pytest.raises(ValueError, match=rf"^the profiler wrote an incomplete file \({len(TRACE) - 20} bytes, no "):
        check_json_complete(str(path), KINETO_FOOTER)
    path.write_bytes(b"[" + TRACE[1:])  # the footer, but not an object
    with pytest.raises(ValueError, match="incomplete file"):
        check_json_complete(str(path), KINETO_FOOTER)
    with pytest.raises(ValueError, match="^the profiler wrote no file: "):
        check_json_complete(str(tmp_path / "missing.json"), KINETO_FOOTER)


def test_the_footer_is_found_after_a_long_trace(tmp_path):
    path = tmp_path / "t.json"
    path.write_bytes(b'{"traceEvents": [' + b" " * 100_000 + b'], "traceName": "x"}')
    check_json_complete(str(path), KINETO_FOOTER)
    path.write_bytes(b'{"nodes": [' + b" " * 5000 + b'], "finish_ts": 12}')
    check_json_complete(str(path), EXECUTION_TRACE_FOOTER)
    with pytest.raises(ValueError):
        check_json_complete(str(path), KINETO_FOOTER)


def test_write_failure_cause_names_the_size_limit_the_full_disk_or_nothing(tmp_path):
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    assert write_failure_cause(str(tmp_path / "x"), 10).startswith(
        "the cause is unknown: the disk has "
    ) and write_failure_cause(str(tmp_path / "x"), 10).endswith(" bytes free and no file size limit was reached")
    resource.setrlimit(resource.RLIMIT_FSIZE, (4 << 20, hard))
    try:
        assert write_failure_cause(str(tmp_path / "x"), (4 << 20) - (1 << 20)) == (
            f"the file size limit (ulimit -f, {4 << 20} bytes) was hit"
        )
        assert "unknown" in write_failure_cause(str(tmp_path / "x"), (4 << 20) - (1 << 20) - 1)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert write_failure_cause(str(tmp_path / "no" / "dir" / "x"), 0) == (
        "the cause is unknown (the directory cannot be examined)"
    )
    assert LOW_SPACE == 1 << 20


def test_kineto_header_must_parse(tmp_path):
    path = tmp_path / "t.json"
    path.write_bytes(b'{"distributedInfo": {"rank": 0}, "traceEvents": [], "traceName": "x"}')
    check_kineto_header(str(path))
    path.write_bytes(b'{"distributedInfo": {"dir": "a\\q"}, "traceEvents": []}')
    with pytest.raises(ValueError, match=r"^the trace's metadata is not valid JSON \(.*\); it was not published$"):
        check_kineto_header(str(path))
    path.write_bytes(b'{"x": 1}')
    with pytest.raises(ValueError, match="^the profiler wrote a trace without a traceEvents list$"):
        check_kineto_header(str(path))
    path.write_bytes(b'{"x": "' + b"a" * (2 << 20) + b'", "traceEvents": []}')
    check_kineto_header(str(path))
    with pytest.raises(ValueError, match="without a traceEvents list"):
        check_kineto_header(str(path), limit=1 << 20)  # not looked for past the limit (read by the MiB)
    path.write_bytes(b'{"x": "' + b"a" * (1 << 20) + b'", "traceEvents": []}')  # in the second MiB
    with pytest.raises(ValueError, match="without a traceEvents list"):
        check_kineto_header(str(path), limit=1 << 20)


def test_gzip_round_trip_and_truncation(tmp_path):
    src, dst = tmp_path / "t.json", tmp_path / "t.json.gz"
    src.write_bytes(TRACE * 1000)
    gzip_file(str(src), str(dst))
    assert gzip.decompress(dst.read_bytes()) == TRACE * 1000 and oct(dst.stat().st_mode & 0o777) == "0o644"
    check_gzip_complete(str(dst))
    with pytest.raises(FileExistsError):
        gzip_file(str(src), str(dst))  # never replaces
    dst.write_bytes(dst.read_bytes()[:-10])
    with pytest.raises(ValueError, match=r"^the compressed trace is incomplete \(EOFError: "):
        check_gzip_complete(str(dst))
    dst.write_bytes(b"not gzip at all")
    with pytest.raises(ValueError, match=r"^the compressed trace is incomplete \(BadGzipFile: "):
        check_gzip_complete(str(dst))


def test_a_bare_file_name_is_examined_in_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert write_failure_cause("rank0.json", 0).startswith("the cause is unknown: the disk has ")


def test_kineto_header_takes_the_first_trace_events_key(tmp_path):
    path = tmp_path / "t.json"
    path.write_bytes(b'{"x": 1, "traceEvents": [{"name": "traceEvents", "args": {"traceEvents": 1}}]}')
    check_kineto_header(str(path))  # a later "traceEvents" (an event's name) is not where the metadata ends
    path.write_bytes(b'"traceEvents": []}')  # found at offset 0: no metadata object before it
    with pytest.raises(ValueError, match="^the trace's metadata is not valid JSON"):
        check_kineto_header(str(path))
