"""docs/report.png shows the report as it is now (issue 33, point 3): the sections stamped into it
by scripts/report_screenshot.sh (scripts/report_png.py) are those of a report built now from the
same inputs. A report that gains, loses or reorders a section fails this until the PNG is remade."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.site import REPO

SHARED_TRACES = Path(os.environ.get("BRIDGE_SHARED") or REPO.parent / "shared") / "fixtures" / "gpu-traces"


def _report_png():
    spec = importlib.util.spec_from_file_location("report_png", REPO / "scripts" / "report_png.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # the report of two 128-rank GPU traces: about 3 s
def test_the_readme_screenshot_shows_the_sections_the_report_has_now(tmp_path):
    if not SHARED_TRACES.is_dir():
        pytest.skip(f"{SHARED_TRACES} is missing (CI clones the repo with shared/ beside it)")
    job = tmp_path / "job128"
    (job / "torch_profile").mkdir(parents=True)
    for rank in (0, 1):  # the inputs scripts/report_screenshot.sh uses
        shutil.copy(
            SHARED_TRACES / f"job128_rank{rank}.json.gz",
            job / "torch_profile" / f"rank{rank}_steps551-552.pt.trace.json.gz",
        )
    shutil.copy(REPO / "tests" / "fixtures" / "memory_schema.pickle", job / "memory_snapshot_0.pickle")
    proc = subprocess.run(
        [sys.executable, "-m", "bridge_plugins", "report", "job128", "-o", "report.html"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    png = _report_png()
    now = png.report_sections((tmp_path / "report.html").read_text(encoding="utf-8"))
    assert now[:4] == ["Findings", "Steps", "Step breakdown", "Timelines"], now
    assert png.stamped_sections(REPO / "docs" / "report.png") == now, (
        "docs/report.png shows another report: remake it with bash scripts/report_screenshot.sh"
    )


def test_a_stamp_reads_back_and_replaces_the_last(tmp_path):
    png = _report_png()
    image = tmp_path / "one.png"
    shutil.copy(REPO / "docs" / "report.png", image)
    png.stamp(image, ["A", "B & C"])
    png.stamp(image, ["Findings", "Steps"])
    assert png.stamped_sections(image) == ["Findings", "Steps"]
    assert image.read_bytes().count(png.KEY) == 1
