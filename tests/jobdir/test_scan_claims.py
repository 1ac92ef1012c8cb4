"""The job-directory scan with a reader registry's ``knows``: which files of other formats it claims,
a report read once from the export beside it, and the exact lines for what nothing claims."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from bridge_plugins.jobdir.scan import NothingToRead, find_inputs

TRACE = gzip.compress(b'{"schemaVersion": 1, "traceEvents": []}')


def knows_nsys(path: Path) -> bool:
    """A registry that reads nsys reports and their SQLite exports (as analysis.formats.knows does)."""
    return path.suffix in (".nsys-rep", ".sqlite")


def _files(root: Path, *names: str) -> list[Path]:
    paths = [root / name for name in names]
    for p in paths:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(TRACE if p.name.endswith(".json.gz") else b"x")
    return paths


def test_a_report_with_its_export_beside_it_is_read_once_from_the_export(tmp_path):
    rep, sqlite, alone, other_sqlite = _files(
        tmp_path, "nsys_profile/profile_7.nsys-rep", "nsys_profile/profile_7.sqlite", "b.nsys-rep", "c.sqlite"
    )
    _files(tmp_path, "notes.txt")
    found = find_inputs([tmp_path], knows_nsys)
    assert found.traces == [alone, other_sqlite, sqlite]  # sorted by path; profile_7.nsys-rep left out
    assert rep not in found.traces
    assert (found.snapshots, found.problems) == ([], [])


def test_an_export_alone_and_a_report_alone_are_each_read(tmp_path):
    rep, sqlite = _files(tmp_path, "a.nsys-rep", "b.sqlite")
    assert find_inputs([tmp_path], knows_nsys).traces == [rep, sqlite]


def test_only_what_knows_claims_is_read_and_a_chrome_trace_still_is(tmp_path):
    trace, rep = _files(tmp_path, "rank0_steps1-2.pt.trace.json.gz", "x.nsys-rep")
    _files(tmp_path, "x.qdstrm", "readme.md")
    found = find_inputs([tmp_path], knows_nsys)
    assert (found.traces, found.problems) == ([trace, rep], [])
    without = find_inputs([tmp_path])  # no registry: the nsys report is not claimed
    assert (without.traces, without.problems) == ([trace], [])


def test_a_directory_of_unclaimed_files_says_so(tmp_path):
    _files(tmp_path, "x.nsys-rep")
    with pytest.raises(NothingToRead) as e:
        find_inputs([tmp_path], lambda p: False)
    assert str(e.value) == (
        f"{tmp_path}: no profiling artifacts (traces or memory snapshots) in this directory; to read files "
        f"named otherwise, name the files (e.g. {tmp_path}/*.json.gz)"
    )


def test_a_named_file_claimed_or_not_gets_its_exact_line(tmp_path):
    rep, txt = _files(tmp_path, "r.nsys-rep", "n.txt")
    found = find_inputs([rep, txt, rep], knows_nsys)
    assert found.traces == [rep]  # named twice: once
    assert found.problems == [
        {
            "file": str(txt),
            "error": "not a trace (.json, .json.gz, nsys .nsys-rep or .sqlite) or a memory snapshot (.pickle)",
        }
    ]
    with pytest.raises(NothingToRead) as e:
        find_inputs([rep, txt])
    assert str(e.value) == (
        f"{rep}: not a trace (.json, .json.gz) or a memory snapshot (.pickle); "
        f"{txt}: not a trace (.json, .json.gz) or a memory snapshot (.pickle)"
    )


def test_missing_and_special_files_are_problems_before_any_claim(tmp_path):
    import os

    fifo = tmp_path / "f.sqlite"
    os.mkfifo(fifo)
    with pytest.raises(NothingToRead) as e:
        find_inputs([tmp_path / "gone.sqlite", fifo], knows_nsys)
    assert str(e.value) == f"{tmp_path / 'gone.sqlite'}: no such file or directory; {fifo}: not a regular file"
