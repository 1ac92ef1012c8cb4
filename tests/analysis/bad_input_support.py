"""Running ``bridge-plugins`` as a user does (a subprocess) and checking a bad input's one-line error."""

from __future__ import annotations

import subprocess
import sys

GOOD = "rank0_steps551-552.pt.trace.json.gz"


def cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "bridge_plugins", *map(str, args)], capture_output=True, text=True, timeout=120
    )


def assert_clean_error(proc, *words):
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and all(w in lines[0] for w in words), lines
