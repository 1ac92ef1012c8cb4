"""Every reader takes a job directory and says a missing path the same way; the PATH and --json
help is one text (issue 33, point 5)."""

from __future__ import annotations

import json
import shutil

import pytest

from bridge_plugins.cli import build_parser, main
from tests.support import ROOT

SNAPSHOT = ROOT / "tests" / "fixtures" / "memory_schema.pickle"


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_memory_reads_the_snapshot_of_a_job_directory(tmp_path, capsys):
    shutil.copy(SNAPSHOT, tmp_path / "memory_snapshot_0.pickle")
    code, from_dir, err = run_cli(capsys, "memory", tmp_path, "--json")
    assert code == 0, err
    assert json.loads(from_dir) == json.loads(
        run_cli(capsys, "memory", tmp_path / "memory_snapshot_0.pickle", "--json")[1]
    )
    code, _, err = run_cli(capsys, "memory", tmp_path, "--compare", tmp_path)
    assert code == 0, err


def test_memory_names_the_snapshots_when_a_directory_holds_several(tmp_path, capsys):
    for rank in (0, 1):
        shutil.copy(SNAPSHOT, tmp_path / f"memory_snapshot_{rank}.pickle")
    code, out, err = run_cli(capsys, "memory", tmp_path)
    assert code == 2 and out == ""
    assert err == (
        f"bridge-plugins memory: error: {tmp_path}: 2 memory snapshots; name one: "
        f"{tmp_path / 'memory_snapshot_0.pickle'}, {tmp_path / 'memory_snapshot_1.pickle'}\n"
    )


def test_memory_says_so_when_a_directory_holds_no_snapshot(tmp_path, capsys):
    code, _, err = run_cli(capsys, "memory", tmp_path)
    assert code == 2
    assert err == f"bridge-plugins memory: error: {tmp_path}: no memory snapshot (.pickle) in this directory\n"


@pytest.mark.parametrize("command", [["summary"], ["diagnose"], ["report", "--force", "-o", "/dev/null"], ["memory"]])
def test_a_missing_path_is_worded_the_same_by_every_reader(tmp_path, capsys, command):
    code, _, err = run_cli(capsys, command[0], tmp_path / "nope", *command[1:])
    assert code == 2
    assert err == f"bridge-plugins {command[0]}: error: {tmp_path / 'nope'}: no such file or directory\n"


def _arguments(command: str) -> dict[str, object]:
    sub = next(a for a in build_parser()._subparsers._group_actions).choices[command]
    return {a.dest: a for a in sub._actions}


def test_the_readers_name_their_path_argument_and_help_it_alike():
    helps = {c: _arguments(c)["paths"].help for c in ("summary", "diagnose", "report", "memory")}
    assert len(set(helps.values())) == 1, helps
    assert {_arguments(c)["paths"].metavar for c in helps} == {"PATH"}


def test_json_help_points_at_the_schema_page_not_a_source_file():
    for command in ("summary", "diagnose", "compare", "memory"):
        help = _arguments(command)["json"].help
        assert ".py" not in help and "docs/" in help, (command, help)
    assert "docs/analysis-schema.md" in _arguments("summary")["json"].help


def test_the_jobs_help_is_the_same_on_every_machine(monkeypatch):
    import bridge_plugins.cli as cli

    helps = set()
    for cpus in (2, 64):
        monkeypatch.setattr(cli, "usable_cpus", lambda cpus=cpus: cpus)
        helps.add(_arguments("summary")["jobs"].help)
    assert len(helps) == 1, helps
