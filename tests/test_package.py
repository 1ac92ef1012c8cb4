"""The package's shape: public imports that must keep working, no module shadowed by a name,
nothing loose at the top of ``bridge_plugins/`` (each module lives in the package of its role), and
the native reader built."""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import subprocess
import sys
import types

import pytest

from tests.support import ROOT, clean_env


def test_public_imports_keep_working():
    code = (
        "from bridge_plugins import ProfilingConfig, NsysPlugin, PyTorchProfilerPlugin, FaultTolerancePlugin\n"
        "from bridge_plugins import ProfilingController\n"
        "from bridge_plugins.runtime import ProfilingController as C\n"
        "from bridge_plugins.plugins import NsysPlugin as N, ProfilingPluginWarning, default_script_args_converter\n"
        "from bridge_plugins.config import ProfilingConfig as P\n"
        "assert C is ProfilingController and N is NsysPlugin and P is ProfilingConfig\n"
        "print('ok')"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=clean_env(), capture_output=True, text=True)
    assert proc.stdout.strip() == "ok", proc.stderr


def test_analysis_modules_are_not_shadowed_by_functions():
    analysis = importlib.import_module("bridge_plugins.analysis")
    for name in ("pipeline", "run_compare"):
        module = importlib.import_module(f"bridge_plugins.analysis.{name}")
        assert isinstance(module, types.ModuleType)
        assert getattr(analysis, name) is module
    modules = {m.name for m in pkgutil.iter_modules(analysis.__path__)}
    assert modules & set(analysis.FRONT_DOOR) == set()  # no front-door name is a submodule's


def test_nothing_loose_at_the_top_of_the_package():
    loose = sorted(p.name for p in (ROOT / "bridge_plugins").glob("*.py"))
    assert loose == ["__init__.py", "__main__.py"], loose


def test_the_old_snapshot_names_still_import():
    """A snapshot's figures were called a summary; the renamed functions keep their old names too."""
    from bridge_plugins.analysis.jsonable import jsonable
    from bridge_plugins.analysis.memory.snapshot import (
        memory_entry,
        snapshot_figures,
        summarize_snapshot,
        summarize_snapshots,
    )
    from bridge_plugins.analysis.memory.snapshot_diff import compare_snapshot_figures, compare_summaries

    snapshot = ROOT / "tests" / "fixtures" / "memory_schema.pickle"
    assert summarize_snapshot(snapshot) == jsonable(snapshot_figures(snapshot))  # the dicts it returned
    assert summarize_snapshots is memory_entry
    assert compare_summaries is compare_snapshot_figures


def test_the_analysis_front_door_names_the_real_functions():
    import bridge_plugins.analysis as analysis

    assert analysis.__all__ == list(analysis.FRONT_DOOR)
    for name, (module, attr) in analysis.FRONT_DOOR.items():
        assert getattr(analysis, name) is getattr(importlib.import_module(module), attr), name
    from bridge_plugins.analysis.page import build

    assert analysis.build_report is build
    submodules = {m.name for m in pkgutil.iter_modules(analysis.__path__)}
    assert submodules & set(analysis.__all__) == set()  # a front-door name never hides a submodule


def test_the_analysis_front_door_imports_no_reader_until_asked():
    code = (
        "import sys, bridge_plugins.analysis as a\n"
        "print(sorted(m for m in sys.modules if m.startswith('bridge_plugins.analysis.') or m == 'numpy'))\n"
        "a.compare_runs\n"
        "print('bridge_plugins.analysis.run_compare' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=clean_env(), capture_output=True, text=True)
    assert proc.stdout.split("\n")[:2] == ["[]", "True"], proc.stderr


def test_no_test_module_is_imported_as_a_library():
    """What tests share lives in helper modules or conftest.py: importing a ``test_*`` module runs
    its tests twice and ties two test files together (issue 29)."""
    pattern = re.compile(r"^\s*(from|import)\s+tests\.[\w.]*\btest_\w*", re.MULTILINE)
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("*.py") if pattern.search(p.read_text())]
    assert offenders == []


def test_the_native_reader_is_built_where_the_tests_run():
    """scripts/setup.sh builds it (and installs a compiler where none is), so the suite reads chunks
    both ways (tests/analysis/test_native_reader.py skips where it is missing: this says so)."""
    from bridge_plugins.analysis.trace import native

    if os.environ.get("BRIDGE_PLUGINS_NATIVE") == "0":
        pytest.skip("switched off by BRIDGE_PLUGINS_NATIVE=0")
    assert native._native is not None, "bridge_plugins/analysis/trace/_native.c is not built: bash scripts/setup.sh"
    assert native._native.__file__.endswith(".so")
