"""A user's own driver: a job under nsys that fails before training (an nsys too old for the
window) is said on the driver's terminal in one line, though ``exp.run()`` returns normally."""

from __future__ import annotations

import os
import sys

import nemo_run as run
import pytest

from tests.launch_support import user_nsys_plugin
from tests.support import system_path_without_nsys

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("nemo_home")]

OLD_NSYS = """#!/bin/sh
# A stand-in for an nsys too old for the window: its help lists no --capture-range.
case "$1" in
  --version) echo "NVIDIA Nsight Systems version 2019.1.0-stand-in" ;;
  profile) [ "$2" = "--help" ] && printf '\\t-o, --output=\\n\\t-t, --trace=\\n\\t-s, --sample=\\n' || exit 9 ;;
esac
"""


def test_a_job_failed_by_its_nsys_is_said_on_the_drivers_terminal(tmp_path, monkeypatch, capfd):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "nsys").write_text(OLD_NSYS)
    (bindir / "nsys").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.path.dirname(sys.executable)}:{system_path_without_nsys()}")
    job = tmp_path / "job.py"
    job.write_text(f"open({str(tmp_path / 'started')!r}, 'w').close()\n")
    with run.Experiment("plugtest", log_level="WARN") as exp:
        exp.add(
            run.Script(path=str(job), entrypoint="python"), executor=run.LocalExecutor(), plugins=[user_nsys_plugin()]
        )
        exp.run(sequential=True)  # returns normally: NeMo Run only records the state
    assert "FAILED" in str(exp.jobs[0].state) and not (tmp_path / "started").exists()
    lines = [ln for ln in capfd.readouterr().err.splitlines() if ln.startswith("[bridge_plugins] NsysPlugin:")]
    assert len(lines) == 1, lines
    assert " FAILED: [bridge_plugins] nsys: error on " in lines[0]
    assert "2019.1.0-stand-in does not know --capture-range" in lines[0]
