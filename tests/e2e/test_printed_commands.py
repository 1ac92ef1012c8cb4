"""The commands the main job prints at the end run as printed, pasted into bash (issue 20): real
paths only, no ``<other job dir>`` placeholder that bash reads as a redirection."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import clean_env, run_job

pytestmark = pytest.mark.integration


def main_job(base_dir: Path) -> str:
    proc = run_job(
        [sys.executable, "-m", "recipes", "--steps", "4", "--start", "1", "--end", "3", "--base-dir", str(base_dir)]
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def printed_commands(out: str) -> list[str]:
    """The command lines under 'How to open them': indented, as a user would paste them."""
    block = out.split("How to open them", 1)[1].splitlines()[1:]
    return [line.strip() for line in block if line.startswith("  ") and not line.strip().startswith("nsys ")]


def bash(command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], env=clean_env(), capture_output=True, text=True, timeout=300)


def test_every_command_the_main_job_prints_runs_in_bash_and_the_second_run_compares_with_the_first(tmp_path):
    first = main_job(tmp_path)
    commands = printed_commands(first)
    assert commands and not [c for c in commands if "<" in c or ">" in c], commands
    assert not [c for c in commands if " report " in c], "no earlier job to compare with yet"
    assert "run this again with the same --base-dir" in first
    for command in commands:
        proc = bash(command)
        assert proc.returncode == 0, f"{command}\n{proc.stderr}"
    (first_job,) = tmp_path.glob("experiments/*/*/tiny_gpt")

    second = main_job(tmp_path)
    (report,) = [c for c in printed_commands(second) if " report " in c]
    assert f"--baseline {first_job} " in report, report
    proc = bash(report)
    assert proc.returncode == 0, f"{report}\n{proc.stderr}"
    (second_job,) = [j for j in tmp_path.glob("experiments/*/*/tiny_gpt") if j != first_job]
    html = (second_job / "compare_report.html").read_text()
    assert f'<div class="inputs">{second_job}</div>' in html and f"Baseline: {first_job}." in html
