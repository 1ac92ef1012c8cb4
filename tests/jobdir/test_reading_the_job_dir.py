"""The job directory's read side, on real files: the protocol files' one read (each refusal's exact
line), the names a reader recognises, and the sort of what a reader was given into traces,
snapshots and one-line problems."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from bridge_plugins.jobdir import names
from bridge_plugins.jobdir.on_demand_files import MAX_FILE_BYTES, ProtocolError, read_json_file
from bridge_plugins.jobdir.scan import (
    NOT_A_TRACE,
    NothingToRead,
    find_artifacts,
    find_inputs,
    looks_like_chrome_trace,
    rank_from_name,
)

TRACE = b'{"schemaVersion": 1, "traceEvents": []}'


# ---------------------------------------------------------------- read_json_file
def test_a_protocol_file_is_read_as_a_json_object(tmp_path):
    (tmp_path / "1.json").write_text('{"id": 1, "ranks": [0]}')
    assert read_json_file(tmp_path / "1.json") == {"id": 1, "ranks": [0]}


def _refusal(path: Path) -> str:
    with pytest.raises(ProtocolError) as e:
        read_json_file(path)
    return str(e.value)


def test_each_unusable_protocol_file_is_refused_with_its_reason(tmp_path):
    p = tmp_path / "r.json"
    assert _refusal(p) == f"{p} cannot be opened (No such file or directory)"
    (tmp_path / "real.json").write_text("{}")
    p.symlink_to(tmp_path / "real.json")
    assert _refusal(p) == f"{p} is a symlink; only regular files are read"
    p.unlink()
    os.mkfifo(p)
    assert (
        _refusal(p) == f"{p} is not a regular file (not a regular file (a FIFO, device or socket would never be read))"
    )
    p.unlink()
    p.mkdir()
    assert _refusal(p) == f"{p} is not a regular file (is a directory, not a file)"
    p.rmdir()
    p.write_bytes(b"{" + b" " * (MAX_FILE_BYTES - 2) + b"}")
    assert read_json_file(p) == {}  # exactly the limit is read
    p.write_bytes(b"{" + b" " * (MAX_FILE_BYTES - 1) + b"}")
    assert _refusal(p) == f"{p} is {MAX_FILE_BYTES + 1} bytes, more than the {MAX_FILE_BYTES} a request may have"
    p.write_bytes(b'{"id": 1')
    assert _refusal(p) == f"{p} is not valid JSON (Expecting ',' delimiter: line 1 column 9 (char 8))"
    p.write_bytes(b'{"id": "\xff"}')
    assert _refusal(p).startswith(f"{p} is not valid JSON ('utf-8' codec can't decode byte 0xff")
    p.write_text("[1, 2]")
    assert _refusal(p) == f"{p} holds a JSON list, not an object"


# ---------------------------------------------------------------- names
def test_split_suffix_keeps_a_compound_suffix_only_when_asked():
    assert names.split_suffix("rank0_steps1-2.pt.trace.json.gz", ".pt.trace.json.gz") == (
        "rank0_steps1-2",
        ".pt.trace.json.gz",
    )
    assert names.split_suffix("rank0_steps1-2.pt.trace.json.gz") == ("rank0_steps1-2.pt.trace.json", ".gz")
    assert names.split_suffix("snap.pickle", ".pkl") == ("snap", ".pickle")
    assert names.split_suffix("snapshot") == ("snapshot", "")


def test_snapshot_stems_carry_the_rank_trigger_and_restarts():
    env = {"SLURM_RESTART_COUNT": "2", "TORCHELASTIC_RESTART_COUNT": "1"}
    assert names.snapshot_stem("memory_snapshot", 3, environ={}) == "memory_snapshot_3"
    assert (
        names.snapshot_stem("memory_snapshot", 3, trigger=4, environ=env)
        == "memory_snapshot_3_trigger4_requeue2_restart1"
    )
    assert names.oom_snapshot_stem("memory_snapshot", 3, environ=env) == "memory_snapshot_oom_rank3_requeue2_restart1"
    parsed = names.parse(f"/d/{names.oom_snapshot_stem('memory_snapshot', 3, environ=env)}.pickle")
    assert (parsed.kind, parsed.rank, parsed.requeue, parsed.restart) == ("oom_snapshot", 3, 2, 1)


def test_a_trace_name_is_built_and_read_back():
    env = {"SLURM_RESTART_COUNT": " 3 ", "TORCHELASTIC_RESTART_COUNT": "0"}
    stem = names.torch_trace_stem(2, 10, 12, trigger=5, environ=env)
    assert stem == "rank2_steps10-12_trigger5_requeue3"
    parsed = names.parse(f"/d/{stem}.1{names.TORCH_TRACE_SUFFIX}")
    assert (parsed.kind, parsed.rank, parsed.first_step, parsed.last_step) == ("torch_trace", 2, 10, 12)
    assert (parsed.trigger, parsed.requeue, parsed.restart, parsed.duplicate) == (5, 3, 0, 1)
    plain = names.parse(f"/d/rank0_steps1-2{names.TORCH_TRACE_SUFFIX}")
    assert (plain.trigger, plain.requeue, plain.restart, plain.duplicate) == (None, 0, 0, 0)
    assert names.parse(f"/d/.{stem}{names.TORCH_TRACE_SUFFIX}") is None  # the writer's temporary
    assert names.parse(f"/d/trace{names.TORCH_TRACE_SUFFIX}") is None
    assert names.parse(f"/d/{stem}{names.CHAKRA_TRACE_SUFFIX}").kind == "chakra_trace"
    assert names.parse("/d/.memory_snapshot_0.pickle") is None  # a dot-name is never ours


def test_a_malformed_restart_counter_counts_as_none():
    assert names.restart_tag({"SLURM_RESTART_COUNT": "abc", "TORCHELASTIC_RESTART_COUNT": "-1"}) == ""
    assert names.restart_tag({"TORCHELASTIC_RESTART_COUNT": "4"}) == "_restart4"
    assert names.restart_tag({}) == ""


def test_nsys_reports_and_configured_snapshots_are_recognised():
    local = names.parse("/d/profile_4242.nsys-rep")
    assert (local.kind, local.rank, local.node, local.job_id) == ("nsys_report", None, None, None)
    slurm = names.parse("/d/profile_4242_77_node1_rank9.qdrep")
    assert (slurm.kind, slurm.rank, slurm.node, slurm.job_id) == ("nsys_report", 9, 1, "77")
    assert names.parse("/d/other.nsys-rep").kind == "nsys_report"
    assert names.parse("/d/mem_2.pkl", "mem.pkl").rank == 2
    assert names.parse("/d/other_2.pkl", "mem.pkl") is None
    assert names.parse("/d/other_2.pickle").kind == "memory_snapshot"  # the default name takes any stem
    assert (names.parse("/d/mem_2.pkl", "mem.pkl").duplicate, names.parse("/d/mem_2.3.pkl", "mem.pkl").duplicate) == (
        0,
        3,
    )
    assert names.parse("/d/mem_21234", "mem.pkl") is None  # without the suffix, whatever its length


def test_the_rank_comes_only_from_our_trace_names():
    assert rank_from_name(Path("rank7_steps10-12.pt.trace.json.gz")) == 7
    assert rank_from_name(Path("memory_snapshot_7.pickle")) is None
    assert rank_from_name(Path("host_1234.pt.trace.json.gz")) is None


# ---------------------------------------------------------------- what a reader was given
def test_a_chrome_trace_is_known_by_its_head(tmp_path):
    cases = {
        "t.json": b"  \n" + TRACE,
        "t.json.gz": gzip.compress(TRACE),
        "list.json": b'[{"traceEvents": []}]',
        "other.json": b'{"events": []}',
        "bad.json.gz": b"not gzip at all",
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "link.json").symlink_to(tmp_path / "t.json")  # a trace the user linked in: read
    got = {name: looks_like_chrome_trace(tmp_path / name) for name in [*cases, "fifo.json", "link.json"]}
    assert got == {"t.json": True, "t.json.gz": True, "list.json": False, "other.json": False} | {
        "bad.json.gz": False,
        "fifo.json": False,
        "link.json": True,
    }


def test_a_job_directory_is_sorted_into_traces_snapshots_and_problems(tmp_path):
    torch_dir = tmp_path / "torch_profile"
    torch_dir.mkdir()
    ours = torch_dir / "rank0_steps10-12.pt.trace.json.gz"
    theirs = torch_dir / "host_1234.1700000000.pt.trace.json"
    other = tmp_path / "plain.json"
    not_a_trace = tmp_path / "config.json"
    snapshot = tmp_path / "memory_snapshot_0.pickle"
    oom = tmp_path / "memory_snapshot_oom_rank1.pickle"
    for p, data in (
        (ours, gzip.compress(TRACE)),
        (theirs, TRACE),
        (other, TRACE),
        (not_a_trace, b"{}"),
        (snapshot, b""),
        (oom, b""),
    ):
        p.write_bytes(data)
    (tmp_path / ".staging.tmp").mkdir()
    (tmp_path / ".staging.tmp" / "rank1_steps10-12.pt.trace.json.gz").write_bytes(TRACE)
    found = find_inputs([tmp_path, ours])  # named twice: counted once
    assert sorted(found.traces) == sorted([ours, theirs, other])
    assert found.snapshots == [snapshot, oom]
    assert found.problems == [{"file": str(not_a_trace), "error": NOT_A_TRACE}]


def test_a_directory_is_a_problem_exactly_when_it_adds_nothing(tmp_path):
    """Counted over traces and snapshots together, whatever was named before it."""
    full, empty = tmp_path / "full", tmp_path / "empty"
    full.mkdir(), empty.mkdir()
    trace, snapshot = full / "rank0_steps1-2.pt.trace.json.gz", full / "memory_snapshot_0.pickle"
    trace.write_bytes(gzip.compress(TRACE)), snapshot.write_bytes(b"")
    found = find_inputs([full])
    assert (found.traces, found.snapshots, found.problems) == ([trace], [snapshot], [])  # one of each
    assert [x["file"] for x in find_inputs([trace, snapshot, empty]).problems] == [str(empty)]


def test_a_directory_without_artifacts_is_a_problem_and_nothing_at_all_is_an_error(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(NothingToRead) as e:
        find_inputs([tmp_path])
    assert str(e.value) == (
        f"{tmp_path}: no profiling artifacts (traces or memory snapshots) in this directory; to read files "
        f"named otherwise, name the files (e.g. {tmp_path}/*.json.gz)"
    )
    with pytest.raises(NothingToRead) as e:
        find_inputs([])
    assert str(e.value) == "no input given"


def test_the_main_job_finds_every_artifact_by_kind_and_rank(tmp_path):
    """find_artifacts over a job directory laid out as the job writes it, with what it must skip."""
    files = {
        "torch_profile/rank0_steps10-12.pt.trace.json.gz": "trace 0",
        "torch_profile/rank0_steps10-12.1.pt.trace.json.gz": "trace 0, a second attempt",
        "torch_profile/rank1_steps10-12.pt.trace.json.gz": "trace 1",
        "torch_profile/host_42.1700000000.pt.trace.json": "torch's own name: skipped, listed",
        "mem_0.pickle": "snapshot 0 (configured name mem.pickle)",
        "mem_oom_rank1.pickle": "OOM snapshot 1",
        "memory_snapshot_0.pickle": "another name: not this job's snapshot",
        "nsys_profile/profile_77.nsys-rep": "nsys report, no rank in its name",
        "nsys_profile/profile_78_9_node0_rank2.nsys-rep": "nsys report of rank 2",
        ".rank2_steps10-12.pt.trace.json.gz": "a dot-name: skipped",
        ".staging.tmp/rank3_steps10-12.pt.trace.json.gz": "in a hidden directory: skipped",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "torch_profile" / "rank4_steps1-2.pt.trace.json.gz").mkdir()  # not a file: skipped
    os.mkfifo(tmp_path / "a_fifo.pickle")  # not a regular file, listed first: skipped, the scan goes on
    found = find_artifacts(tmp_path, "out/mem.pickle")
    t = tmp_path / "torch_profile"
    assert found.traces == {
        0: [t / "rank0_steps10-12.1.pt.trace.json.gz", t / "rank0_steps10-12.pt.trace.json.gz"],
        1: [t / "rank1_steps10-12.pt.trace.json.gz"],
    }
    assert found.memory == {0: [tmp_path / "mem_0.pickle"], 1: [tmp_path / "mem_oom_rank1.pickle"]}
    assert found.nsys == [
        tmp_path / "nsys_profile" / n for n in ("profile_77.nsys-rep", "profile_78_9_node0_rank2.nsys-rep")
    ]
    assert found.skipped == [t / "host_42.1700000000.pt.trace.json"]


def test_named_files_are_sorted_and_each_unreadable_one_named(tmp_path):
    trace, snapshot = tmp_path / "t.json", tmp_path / "s.pkl"
    trace.write_bytes(TRACE), snapshot.write_bytes(b"")
    chakra = tmp_path / f"rank0_steps1-2{names.CHAKRA_TRACE_SUFFIX}"
    chakra.write_text("{}")
    notes, fifo = tmp_path / "notes.txt", tmp_path / "pipe.json"
    notes.write_text("x")
    os.mkfifo(fifo)
    found = find_inputs([trace, tmp_path / "missing.json", fifo, chakra, notes, snapshot])
    assert (found.traces, found.snapshots) == ([trace], [snapshot])
    assert found.problems == [
        {"file": str(tmp_path / "missing.json"), "error": "no such file or directory"},
        {"file": str(fifo), "error": "not a regular file"},
        {"file": str(chakra), "error": "a Chakra execution trace (operator graph), not a Chrome trace with times"},
        {"file": str(notes), "error": "not a trace (.json, .json.gz) or a memory snapshot (.pickle)"},
    ]
    assert find_inputs([snapshot]).snapshots == [snapshot]  # snapshots alone are enough
    with pytest.raises(NothingToRead) as e:
        find_inputs([notes, tmp_path / "missing.json"])
    assert str(e.value) == (
        f"{notes}: not a trace (.json, .json.gz) or a memory snapshot (.pickle); "
        f"{tmp_path / 'missing.json'}: no such file or directory"
    )
