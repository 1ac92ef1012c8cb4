"""Which Python to use, when the one running the main job lacks the project's packages.

``python3 -m recipes`` from the checkout finds our own packages in the working directory, and
then fails on the first dependency (nemo_run, torch, omegaconf) deep in an import: one line that
names the venv's Python replaces that traceback.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

OUR_PACKAGES = ("recipes", "bridge_plugins")

VENV_PYTHON = Path(__file__).resolve().parents[1] / ".venv" / "bin" / "python"
"""The Python that scripts/setup.sh makes for this checkout."""


def missing_dependency_line(error: ModuleNotFoundError, command: str) -> str | None:
    """The one error line for a dependency this Python lacks, or None (our own module is missing: a bug)."""
    if not error.name or error.name.split(".")[0] in OUR_PACKAGES:
        return None
    ours = os.path.relpath(VENV_PYTHON) if VENV_PYTHON.is_relative_to(Path.cwd()) else str(VENV_PYTHON)
    return (
        f"python -m {command}: error: {error}: {sys.executable} is not the project's Python; "
        f"run {ours} -m {command} (bash scripts/setup.sh makes it)"
    )
