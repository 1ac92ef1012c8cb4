"""Every figure of ``summary --json`` pinned on the real GPU traces and a synthetic one.

A change to the reader, the collector or an analyzer that is meant to be faster or leaner must
leave the output byte for byte as it was; these digests were taken at commit 1e03daf (before the
issue 18 speed and memory work) and still hold. A change that is meant to change figures updates
the digest in the same commit and says why.

Issue 31 changed them by adding ``per_step[i].breakdown``, ``input_wait_us`` and ``input_span``,
each trace's ``precision`` and the ``fp32_gemm`` finding (job2 and the synthetic trace): without
those, every digest was still the one taken at 1e03daf.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from benchmarks.analysis_scale import build
from bridge_plugins.analysis.jsonable import dumps
from bridge_plugins.analysis.pipeline import summarize

FIXTURES = (
    Path(os.environ.get("BRIDGE_SHARED") or Path(__file__).resolve().parents[3] / "shared") / "fixtures" / "gpu-traces"
)
if not FIXTURES.is_dir():
    pytest.skip(f"{FIXTURES} missing: the repo's shared/ folder is not beside it", allow_module_level=True)

PINNED = {
    "job2_rank0.json.gz": "3c0a7589bf71b26c16674516354f325c083ca43d819b02ecc0c5a20b18b24a94",
    "job128_rank0.json.gz": "d19f3c40778f2548be596ed6c8882074409c51256130a800c49d0576aad818be",
    "job128_rank1.json.gz": "a43c93f3d32fe6c7344a2b4f538651d9f350a67714086b79da2d61aa70c6f6d4",
    "synthetic": "1b9f7794415eeaa449811e6105a831a74e4248bf79f9113c3abfed6014945ac3",  # job2's events repeated to 5 MB (benchmarks/analysis_scale.build)
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
