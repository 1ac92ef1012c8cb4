"""The ``bridge-plugins`` process runs :func:`bridge_plugins.cli.main` and ends with what is alive
frozen (``gc.freeze``): the interpreter's last collections then skip it (docs/scale.md)."""

from __future__ import annotations

import gc
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

from bridge_plugins import cli


def test_the_console_script_and_python_m_run_the_freezing_entry():
    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "bridge-plugins"]
    assert script.value == "bridge_plugins.cli:run_and_exit"
    code = "import gc, runpy; import bridge_plugins.cli as c; gc.freeze = lambda: print('froze'); "
    code += "c.main = lambda: print('main ran') or 3; runpy.run_module('bridge_plugins', run_name='__main__')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (3, "main ran\nfroze\n")


@pytest.mark.parametrize("code", [0, 2])
def test_run_and_exit_freezes_after_main_and_exits_with_its_code(monkeypatch, code):
    calls: list[str] = []
    monkeypatch.setattr(cli, "main", lambda: calls.append("main") or code)
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    with pytest.raises(SystemExit) as e:
        cli.run_and_exit()
    assert (calls, e.value.code) == (["main", "freeze"], code)
