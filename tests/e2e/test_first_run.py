"""What a newcomer sees in the first ten minutes: commands that work as printed, messages that say
what happened. Each test here failed on the code before its fix (issue 9, "First run")."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from recipes import after_job, arguments, launch
from recipes.train import main as train_main
from tests.support import ROOT

FIXTURES = ROOT / "tests" / "fixtures"


def _arts(**kinds):
    return SimpleNamespace(**{"traces": {}, "memory": {}, "nsys": [], **kinds})


def test_how_to_open_names_a_bridge_plugins_that_runs_when_the_venv_is_not_active(tmp_path, monkeypatch):
    # `.venv/bin/python -m recipes` (the README's command) leaves .venv/bin off PATH: a bare
    # `bridge-plugins summary ...` would be "command not found"
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert shutil.which("bridge-plugins") is None
    lines = after_job.how_to_open(_arts(traces={0: [tmp_path / "t"]}, memory={0: [tmp_path / "m"]}), tmp_path)
    commands = [line.split("    #")[0].strip() for line in lines if " summary " in line or " memory " in line]
    assert len(commands) == 2
    for command in commands:
        program = command.split()[0]
        assert Path(program).is_absolute() and Path(program).name == "bridge-plugins", command
        help_run = subprocess.run([program, "summary", "--help"], capture_output=True, text=True, timeout=120)
        assert help_run.returncode == 0 and "usage: bridge-plugins summary" in help_run.stdout


def test_how_to_open_says_bridge_plugins_by_name_when_path_finds_this_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:/usr/bin:/bin")
    lines = after_job.how_to_open(_arts(traces={0: [tmp_path / "t"]}), tmp_path)
    assert any(line.strip().startswith(f"bridge-plugins summary {tmp_path}") for line in lines), lines


def test_the_header_of_a_run_without_profiler_mentions_no_window_or_ranks():
    args = arguments.build_parser().parse_args(["--profiler", "none"])
    header = launch.run_header(args)
    assert header == "[recipes] no profiler, 2 rank(s), 20 steps, executor local"
    profiled = launch.run_header(arguments.build_parser().parse_args(["--ranks", "all"]))
    assert "pytorch profiler, window steps 10-14, ranks all, 2 rank(s)" in profiled


def test_train_help_columns_line_up_for_the_longest_key(capsys):
    assert train_main(["--help"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if re.match(r"  [a-z_]+\.[a-z_]+ ", line)]
    assert any("pytorch_profiler_collect_callstack" in row for row in rows)
    type_columns = {re.match(r"  \S+ +", row).end() for row in rows}
    default_columns = {row.index(" default ") for row in rows}
    assert len(type_columns) == 1 and len(default_columns) == 1, rows


def test_summary_of_a_directory_of_traces_named_otherwise_says_to_name_the_files(tmp_path):
    # e.g. traces copied from another tool: the directory scan reads only the names we write
    shutil.copy(FIXTURES / "memory_recipe_b4.pickle", tmp_path / "snap.bin")
    (tmp_path / "trace.json.gz").write_bytes(b"")
    proc = subprocess.run(
        [sys.executable, "-m", "bridge_plugins", "summary", str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no profiling artifacts" in lines[0], proc.stderr
    assert "name the files" in lines[0] and f"{tmp_path}/*.json.gz" in lines[0], lines[0]


@pytest.mark.slow
def test_train_help_piped_into_head_ends_without_a_traceback():
    # `python -m recipes.train --help | head`: the reader leaves before the help is written
    proc = subprocess.Popen(
        [sys.executable, "-m", "recipes.train", "--help"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    proc.stdout.close()  # torch's import takes the child far longer than this
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0, err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


@pytest.mark.parametrize("name", ["my run", "run;x", "a/b", "$(id)", ""])
def test_an_experiment_name_that_a_shell_would_split_is_a_one_line_error(name, tmp_path, capsys):
    # the name becomes two directories of the job's path, which NeMo Run gives a shell unquoted:
    # 'my run' failed the local job after launch, 'run;x' ran `x/...` and ended in a traceback
    parser = arguments.build_parser()
    args = parser.parse_args(["--name", name, "--base-dir", str(tmp_path)])
    with pytest.raises(SystemExit) as stopped:
        arguments.check_args(args, parser)
    assert stopped.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("python -m recipes: error: --name ") and repr(name) in err, err


def test_an_ordinary_experiment_name_passes(tmp_path):
    parser = arguments.build_parser()
    arguments.check_args(parser.parse_args(["--name", "nightly-run_2.b", "--base-dir", str(tmp_path)]), parser)


def test_summary_piped_into_head_ends_with_status_0(tmp_path):
    # `bridge-plugins summary JOB | head`: the reader leaving is fine (the CLI says so), not a failure
    # that `set -o pipefail` scripts would stop on
    shutil.copy(FIXTURES / "memory_recipe_b4.pickle", tmp_path / "memory_snapshot_0.pickle")
    proc = subprocess.Popen(
        [sys.executable, "-m", "bridge_plugins", "summary", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    proc.stdout.close()  # before the child has imported anything
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0, err
    assert "Traceback" not in err, err


def test_how_to_open_names_real_files_never_a_placeholder_bash_would_read_as_a_redirection(tmp_path):
    nsys = tmp_path / "nsys_profile" / "profile_123.nsys-rep"
    lines = after_job.how_to_open(_arts(traces={0: [tmp_path / "t"]}, nsys=[nsys]), tmp_path)
    commands = [line.strip() for line in lines if line.startswith("  ")]
    assert commands and not [c for c in commands if "<" in c or ">" in c], commands
    assert f"  nsys stats {nsys}    # tables in the terminal (nsys-ui {nsys}: the GUI)" in lines
