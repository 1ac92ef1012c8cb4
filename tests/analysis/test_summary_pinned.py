"""Every figure of ``summary --json`` pinned on the real GPU traces and a synthetic one.

A change to the reader, the collector or an analyzer that is meant to be faster or leaner must
leave the output byte for byte as it was; these digests were taken at commit 1e03daf (before the
issue 18 speed and memory work) and still hold. A change that is meant to change figures updates
the digest in the same commit and says why.

Issue 31 changed them by adding ``per_step[i].breakdown``, ``input_wait_us`` and ``input_span``
(without those fields every digest was still the one taken at 1e03daf).
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
    "job2_rank0.json.gz": "915859249d1b98cfee0a8c5291d06bc0d202d27e7f39f9666ed624d01d8505fc",
    "job128_rank0.json.gz": "2a4939f021d550bbad4edfd4ca3292bdb1652f10aea175b83b3af0ce42b806a7",
    "job128_rank1.json.gz": "f09ebe53c6e04ccc146186244c8161910737cba3603ffee260bef887cd543d71",
    "synthetic": "ed53806a6d919dca9f49351390b24a68e516258a501afd1e770874d907742e1c",  # job2's events repeated to 5 MB (benchmarks/analysis_scale.build)
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
