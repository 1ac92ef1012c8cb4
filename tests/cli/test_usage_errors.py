"""A mistyped flag or command of ``bridge-plugins``: the subcommand's own usage and the closest
match ("did you mean --json?"), as git and pip do (issue 33, point 6)."""

from __future__ import annotations

import pytest

from bridge_plugins.cli import main


def usage_error(capsys, *argv: str) -> list[str]:
    with pytest.raises(SystemExit) as stop:
        main(list(argv))
    assert stop.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err.splitlines()


def test_a_mistyped_flag_shows_the_subcommands_usage_and_the_closest_flag(capsys, tmp_path):
    lines = usage_error(capsys, "summary", "--jsn", str(tmp_path))
    assert lines[0].startswith("usage: bridge-plugins summary "), lines
    assert lines[-1] == "bridge-plugins summary: error: unrecognized arguments: --jsn (did you mean --json?)"


def test_a_mistyped_flag_with_a_value_is_matched_by_its_name(capsys, tmp_path):
    lines = usage_error(capsys, "report", str(tmp_path), "--forse", "--outptu=x.html")
    assert lines[-1] == (
        "bridge-plugins report: error: unrecognized arguments: --forse --outptu=x.html "
        "(did you mean --force, --output?)"
    ), lines


def test_an_extra_argument_like_no_flag_gets_no_guess(capsys, tmp_path):
    lines = usage_error(capsys, "compare", "a", "b", "c")
    assert lines[-1] == "bridge-plugins compare: error: unrecognized arguments: c", lines


def test_a_mistyped_command_names_the_closest_command(capsys):
    lines = usage_error(capsys, "sumary", "x")
    assert lines[-1].startswith("bridge-plugins: error: argument COMMAND: invalid choice: 'sumary'"), lines
    assert lines[-1].endswith("; did you mean 'summary'?"), lines
