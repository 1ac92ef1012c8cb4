"""Every figure of ``summary --json`` pinned on the real GPU traces and a synthetic one.

A change to the reader, the collector or an analyzer that is meant to be faster or leaner must
leave the output byte for byte as it was; these digests were taken at commit 1e03daf (before the
issue 18 speed and memory work) and still hold. A change that is meant to change figures updates
the digest in the same commit and says why.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from benchmarks.analysis_scale import build
from bridge_plugins.analysis.jsonable import dumps
from bridge_plugins.analysis.summarize import summarize

FIXTURES = (
    Path(os.environ.get("BRIDGE_SHARED") or Path(__file__).resolve().parents[3] / "shared") / "fixtures" / "gpu-traces"
)
if not FIXTURES.is_dir():
    pytest.skip(f"{FIXTURES} missing: the repo's shared/ folder is not beside it", allow_module_level=True)

PINNED = {
    "job2_rank0.json.gz": "448bacbc8ba584c6b1316c65b2ee60c392d1963a9a2f1ad77421f4e01378304f",
    "job128_rank0.json.gz": "49351ef6b556041b020adff3345ec714b0a951f83f4c1d0fcf9dbc21712d0570",
    "job128_rank1.json.gz": "4e7d9780c60bde812a8c5d28f4284591a47bb20ddf2ba9b05385d7f06e6aff27",
    "synthetic": "88c67b6ae9f5eddb733f5140e570d266e36e81e2579aa82f6a3c663ce771567e",  # job2's events repeated to 5 MB (benchmarks/analysis_scale.build)
}


def digest(path: Path) -> str:
    """sha256 of the summary JSON with every operator and kernel (top=None) and the timelines,
    the file's folder written as DIR (it appears in the findings)."""
    text = dumps(summarize([path], top=None)).replace(str(path.parent), "DIR")
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("name", [n for n in PINNED if n != "synthetic"])
def test_summary_of_a_gpu_fixture_is_pinned(name):
    assert digest(FIXTURES / name) == PINNED[name]


def test_summary_of_a_synthetic_trace_is_pinned(tmp_path):
    path = tmp_path / "rank0.json"
    build(path, 5)
    assert digest(path) == PINNED["synthetic"]
