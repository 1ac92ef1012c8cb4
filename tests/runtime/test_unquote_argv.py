"""runtime/entry/unquote_argv.py in this process: NeMo Run's quoting and empty postfix undone, and the
job started by path or module with the ``sys.argv``, ``sys.path[0]`` and ``__name__`` Python gives it.
(tests/plugins/test_unquote_argv_run.py runs it for real under LocalExecutor and torchrun.)"""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from bridge_plugins.runtime.entry.unquote_argv import job_args, main, unquoted

AWKWARD = ["it's $HOME; `x`", "a b", "", "--flag", "x=[1, 2]", "plain"]
RECORDER = """\
import json, os, sys
with open(os.environ["ARGV_OUT"], "w") as f:
    json.dump({"argv": sys.argv, "path0": sys.path[0], "name": __name__}, f)
"""


@pytest.mark.parametrize("arg", AWKWARD)
def test_what_shlex_quote_wrote_is_unquoted(arg):
    assert unquoted(shlex.quote(arg)) == arg


@pytest.mark.parametrize("arg", ["a b", "'unbalanced", "'a' 'b'", "x'y'", '"a"', "", "--flag"])
def test_what_shlex_quote_did_not_write_is_left_as_it_is(arg):
    assert unquoted(arg) == arg


def test_options_come_off_and_only_then_the_args_are_changed():
    quoted = [shlex.quote(a) for a in AWKWARD]
    assert job_args(["--quoted", "-m", "pkg", *quoted]) == ["-m", "pkg", *AWKWARD]
    assert job_args(["--nsys-postfix", "--quoted", "p.py", *quoted, ""]) == ["p.py", *AWKWARD]
    assert job_args(["--nsys-postfix", "p.py", "'a b'", ""]) == ["p.py", "'a b'"]
    assert job_args(["--nsys-postfix", "p.py", "x"]) == ["p.py", "x"]  # run directly: no postfix
    assert job_args(["--nsys-postfix"]) == []
    assert job_args(["p.py", "'a b'", ""]) == ["p.py", "'a b'", ""]
    assert job_args(["p.py", "--quoted"]) == ["p.py", "--quoted"]  # the job's own option


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """Where the recorder job writes; sys.argv and sys.path are put back after the test."""
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("ARGV_OUT", str(tmp_path / "argv.json"))
    return lambda: json.loads((tmp_path / "argv.json").read_text())


def test_a_script_by_path_gets_its_args_and_its_directory(tmp_path, recorded):
    job = tmp_path / "jobdir" / "job.py"
    job.parent.mkdir()
    job.write_text(RECORDER)
    link = tmp_path / "link.py"
    link.symlink_to(job)
    main(["--quoted", str(link), *(shlex.quote(a) for a in AWKWARD)])
    assert recorded() == {"argv": [str(link), *AWKWARD], "path0": str(job.parent), "name": "__main__"}


def test_a_module_gets_its_name_as_argv0_and_the_working_directory(tmp_path, recorded, monkeypatch):
    (tmp_path / "argv_recorder_job.py").write_text(RECORDER)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "argv_recorder_job", raising=False)
    main(["--nsys-postfix", "-m", "argv_recorder_job", "a b", ""])
    job = recorded()
    assert job == {"argv": [str(tmp_path / "argv_recorder_job.py"), "a b"], "path0": str(tmp_path), "name": "__main__"}


@pytest.mark.parametrize("argv", [[], ["-m"], ["--quoted"], ["--quoted", "-m"]])
def test_without_a_job_it_prints_the_usage(argv):
    with pytest.raises(SystemExit) as raised:
        main(argv)
    assert raised.value.code == "usage: unquote_argv.py [--quoted] [--nsys-postfix] (-m MODULE | PATH) ARGS..."


def test_a_module_without_arguments_is_run(tmp_path, recorded, monkeypatch):
    (tmp_path / "argv_recorder_alone.py").write_text(RECORDER)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "argv_recorder_alone", raising=False)
    main(["-m", "argv_recorder_alone"])
    assert recorded() == {
        "argv": [str(tmp_path / "argv_recorder_alone.py")],
        "path0": str(tmp_path),
        "name": "__main__",
    }
