"""What the README tells a new user to type is what happens (issue 33, points 2 and 8): it says
what ``scripts/test.sh`` installs and edits as root before the user runs it, and every
``bridge-plugins`` command it prints runs without the venv active, as it says it may."""

from __future__ import annotations

import re
import shlex
import subprocess

from tests.docs.site import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def _paragraph_after(command: str) -> str:
    """The README's text from the code block that holds ``command`` to the next heading."""
    start = README.index(command)
    end = README.find("\n#", start)
    return README[start : end if end != -1 else None]


def test_the_readme_says_what_test_sh_installs_and_edits_as_root():
    said = _paragraph_after("bash scripts/test.sh\n")
    packages = re.search(r"^PACKAGES=\((.*?)\)", (REPO / "scripts/slurm/up.sh").read_text(), re.M)
    assert packages, "scripts/slurm/up.sh no longer lists PACKAGES=(...)"
    for thing in [*shlex.split(packages.group(1)), "chromium", "/etc/hosts", "/etc/slurm", "root"]:
        assert thing in said, f"the README's `bash scripts/test.sh` does not say it touches {thing}"
    assert "--quick" in said and "docs/contributing.md#test-lanes" in said


def test_every_bridge_plugins_command_of_the_readme_runs_without_the_venv_active(tmp_path):
    commands = re.findall(r"^(\S*bridge-plugins) (\w+) ", README, re.M)
    assert len(commands) >= 2, commands
    bare = sorted({program for program, _ in commands if not program.startswith(".venv/bin/")})
    assert not bare, f"'command not found' unless the venv is active: {bare}"
    for program, subcommand in commands:
        proc = subprocess.run(
            [str(REPO / program), subcommand, "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, proc.stderr
