"""The ``bridge-plugins`` process runs :func:`bridge_plugins.cli.main` with the collector off while
the command imports its modules (until ``analysis_starts``), and ends with what is alive frozen
(``gc.freeze``): the interpreter's last collections then skip it (docs/scale.md)."""

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
    assert (done.returncode, done.stdout) == (3, "main ran\nfroze\nfroze\n")  # analysis_starts', then at the end


@pytest.mark.parametrize("code", [0, 2])
def test_run_and_exit_freezes_after_main_and_exits_with_its_code(monkeypatch, code):
    """A command that never says its analysis starts: the collector is off through it, on again after."""
    calls: list[str] = []
    monkeypatch.setattr(cli, "main", lambda: calls.append(f"main, collector on: {gc.isenabled()}") or code)
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    with pytest.raises(SystemExit) as e:
        cli.run_and_exit()
    assert (calls, e.value.code) == (["main, collector on: False", "freeze", "freeze"], code)
    assert gc.isenabled() and cli._GC_HELD is False


def test_the_collector_is_on_again_with_the_imports_frozen_once_the_analysis_starts(monkeypatch):
    calls: list[str] = []

    def command() -> int:
        calls.append(f"imports, collector on: {gc.isenabled()}")
        cli.analysis_starts()
        calls.append(f"analysis, collector on: {gc.isenabled()}")
        cli.analysis_starts()  # once only
        return 0

    monkeypatch.setattr(cli, "main", command)
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    with pytest.raises(SystemExit):
        cli.run_and_exit()
    assert calls == ["imports, collector on: False", "freeze", "analysis, collector on: True", "freeze"]


def test_outside_the_commands_process_the_analysis_start_changes_nothing(monkeypatch):
    """Tests call main() in their own process, and so may a user: their collector is theirs."""
    monkeypatch.setattr(gc, "freeze", lambda: pytest.fail("froze a process the command does not own"))
    gc.disable()
    try:
        cli.analysis_starts()
        assert not gc.isenabled()
    finally:
        gc.enable()
    cli.analysis_starts()
    assert gc.isenabled()
