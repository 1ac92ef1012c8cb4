"""Ctrl-C in the ``bridge-plugins`` command: exit 130 and no traceback, also when Python hands the
KeyboardInterrupt over wrapped in another exception (3.11 does while a class is built)."""

from __future__ import annotations

import subprocess
import sys

from bridge_plugins.cli.ctrl_c import caused_by_ctrl_c
from tests.support import ROOT, clean_env


def _summary_whose_run(body: str) -> subprocess.CompletedProcess:
    """``bridge-plugins summary`` with its ``run`` replaced by a function whose body is ``body``."""
    code = (
        "import sys\nimport bridge_plugins.cli.summary as summary\n"
        f"def run(args):\n    {body}\n"
        "summary.run = run\nfrom bridge_plugins.cli import main\nsys.exit(main(['summary', 'x.json']))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], env=clean_env(PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=120
    )


def test_a_ctrl_c_wrapped_while_a_class_is_built_is_exit_130_and_silent():
    body = "class F:\n        def __set_name__(self, o, n): raise KeyboardInterrupt\n    class C: f = F()"
    proc = _summary_whose_run(body)
    assert (proc.returncode, proc.stdout, proc.stderr) == (130, "", "")


def test_an_error_that_is_not_a_ctrl_c_still_shows_its_traceback():
    proc = _summary_whose_run("raise RuntimeError('a bug of ours')")
    assert proc.returncode == 1
    assert proc.stderr.startswith("Traceback") and proc.stderr.endswith("RuntimeError: a bug of ours\n")


def test_caused_by_ctrl_c_follows_causes_and_contexts_and_stops_on_a_cycle():
    ctrl_c = KeyboardInterrupt()
    wrapped = RuntimeError("wrapped")
    wrapped.__cause__ = ctrl_c
    outer = ValueError("during handling")
    outer.__context__ = wrapped
    assert caused_by_ctrl_c(outer) and caused_by_ctrl_c(ctrl_c)
    a, b = ValueError("a"), ValueError("b")
    a.__context__, b.__context__ = b, a  # a cycle with no Ctrl-C in it
    assert not caused_by_ctrl_c(a)
