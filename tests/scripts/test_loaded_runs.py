"""scripts/loaded_runs.sh refuses a run count that is not a whole number before it starts any load:
a value like ``3; rm -rf x`` once ran no test at all and still printed "3 of 3 runs passed"."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.support import ROOT


def _copy_with_stand_ins(tmp_path, test_sh: str, stress_ng: str) -> dict[str, str]:
    """scripts/loaded_runs.sh copied into ``tmp_path`` beside a stand-in scripts/test.sh and a stand-in
    stress-ng (first on PATH), so that the real suite and load never start; the environment to run it."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts/loaded_runs.sh", tmp_path / "scripts/loaded_runs.sh")
    (tmp_path / "scripts/test.sh").write_text(test_sh)
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "stress-ng").write_text(stress_ng)
    (fake_bin / "stress-ng").chmod(0o755)
    return {"PATH": f"{fake_bin}:/usr/bin:/bin", "LOADED_RUNS_LOGS": str(tmp_path / "logs")}


@pytest.mark.parametrize("runs", ["0", "abc", "3; touch PWNED", "$(touch PWNED)", "1000", "-1", ""])
def test_a_bad_run_count_is_refused_before_any_load(tmp_path, runs):
    """Run from a copy whose scripts/test.sh and stress-ng are stand-ins that only record being run,
    so that a count the script wrongly accepts never starts the real suite."""
    env = _copy_with_stand_ins(
        tmp_path, f"touch {tmp_path}/test-started\n", f"#!/bin/sh\ntouch {tmp_path}/stress-ng-started\n"
    )
    run = subprocess.run(
        ["bash", str(tmp_path / "scripts/loaded_runs.sh"), runs],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr == (
        f"usage: scripts/loaded_runs.sh [N]: N, the number of runs, is a whole number from 1 to 999 (got '{runs}')\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "scripts"]  # no load, no run, no PWNED


def test_a_good_run_count_runs_the_suite_that_many_times_beside_the_load(tmp_path):
    """The stand-ins again: two runs, each recorded, the load started once and stopped."""
    env = _copy_with_stand_ins(
        tmp_path, f"echo run >> {tmp_path}/runs\n", f"#!/bin/sh\necho load >> {tmp_path}/load\nexec sleep 60\n"
    )
    run = subprocess.run(
        ["bash", str(tmp_path / "scripts/loaded_runs.sh"), "2"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "runs").read_text() == "run\nrun\n"
    assert (tmp_path / "load").read_text() == "load\n"
    assert run.stdout.splitlines()[-1] == "[loaded] 2 of 2 runs passed in a row"
