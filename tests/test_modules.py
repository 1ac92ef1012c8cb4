"""Every module of ``bridge_plugins`` imports, and every exception class it defines derives from
``BridgePluginsError`` (every warning from ``BridgePluginsWarning``): checked by walking the
package, so a new module or a new error class is covered without a line here.

One subprocess imports them all (a clean interpreter: what a user gets, not what earlier tests
left in ``sys.modules``) and prints what it found as JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support import clean_env

# Modules the walk does not import, each with its reason; nothing else may be left out.
NOT_IMPORTED = {
    "bridge_plugins.__main__": "runs the CLI on import (python -m bridge_plugins)",
}

_WALK = """
import importlib, inspect, json, pkgutil, sys, traceback
import bridge_plugins
skip = set(json.loads(sys.argv[1]))
failed, classes, names = {}, [], []
for info in pkgutil.walk_packages(bridge_plugins.__path__, "bridge_plugins."):
    names.append(info.name)
    if info.name in skip:
        continue
    try:
        module = importlib.import_module(info.name)
    except BaseException:
        failed[info.name] = traceback.format_exc(limit=3)
        continue
    for attr, value in vars(module).items():
        if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == info.name:
            kind = "warning" if issubclass(value, Warning) else "error"
            ok = issubclass(value, bridge_plugins.BridgePluginsWarning if kind == "warning" else bridge_plugins.BridgePluginsError)
            classes.append([f"{info.name}.{attr}", kind, ok])
print(json.dumps({"failed": failed, "classes": classes, "names": names}))
"""


@pytest.fixture(scope="module")
def walk() -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _WALK, json.dumps(sorted(NOT_IMPORTED))],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.slow
def test_every_module_imports(walk):
    assert walk["failed"] == {}
    assert len(walk["names"]) > 100  # the walk found the package, not an empty path
    assert set(NOT_IMPORTED) <= set(walk["names"]), "a module left out by name no longer exists"


@pytest.mark.slow
def test_every_error_and_warning_class_derives_from_ours(walk):
    found = {name for name, _, _ in walk["classes"]}
    # the walk sees the classes it must: one per layer, and a warning
    assert {
        "bridge_plugins.analysis.trace.reader.TraceError",
        "bridge_plugins.runtime.artifacts.ArtifactError",
        "bridge_plugins.jobdir.scan.NothingToRead",
        "bridge_plugins.cli.UsageError",
        "bridge_plugins.plugins.edits.NsysNotFoundError",
        "bridge_plugins.plugins.edits.NsysNotFoundWarning",
    } <= found
    assert [name for name, _, ok in walk["classes"] if not ok] == []


@pytest.mark.slow  # plugins.edits imports nemo_run: ~2 s
def test_errors_keep_their_builtin_bases():
    """``except OSError`` / ``except ValueError`` / ``except FileNotFoundError`` catch what they did."""
    from bridge_plugins import BridgePluginsError, BridgePluginsWarning
    from bridge_plugins.analysis.memory.loader import SnapshotFormatError
    from bridge_plugins.jobdir.atomic_write import NotWrittenWhole
    from bridge_plugins.jobdir.on_demand_files import ProtocolError
    from bridge_plugins.plugins.edits import NsysNotFoundError, NsysNotFoundWarning

    assert issubclass(NotWrittenWhole, OSError) and issubclass(NotWrittenWhole, BridgePluginsError)
    assert issubclass(ProtocolError, ValueError) and issubclass(SnapshotFormatError, ValueError)
    assert issubclass(NsysNotFoundError, FileNotFoundError)
    assert issubclass(NsysNotFoundWarning, UserWarning) and issubclass(NsysNotFoundWarning, BridgePluginsWarning)
    assert not issubclass(BridgePluginsWarning, BridgePluginsError)
    e = NotWrittenWhole(28, "No space left on device", "f")
    assert (e.errno, str(e)) == (28, "[Errno 28] No space left on device: 'f'")
