"""The real GPU traces the analysis tests read (../shared/fixtures/gpu-traces, from HTA's test data):
where they are, which files make each job; a test module that imports this is skipped without them."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

from tests.fixtures.old_format import load, to_old_format

# <repo>/../shared as CI lays it out; BRIDGE_SHARED points elsewhere (a worktree away from shared/)
FIXTURES = (
    Path(os.environ.get("BRIDGE_SHARED") or Path(__file__).resolve().parents[3] / "shared") / "fixtures" / "gpu-traces"
)
JOBS = {"job128": ["job128_rank0.json.gz", "job128_rank1.json.gz"], "job2": ["job2_rank0.json.gz"]}
if not FIXTURES.is_dir():
    pytest.skip(f"{FIXTURES} missing: the repo's shared/ folder is not beside it", allow_module_level=True)

J128 = [FIXTURES / f for f in JOBS["job128"]]


@functools.cache
def job2_torch19() -> dict:
    """job2's rank 0 rewritten in torch 1.9's trace format (read once per session)."""
    return to_old_format(load(FIXTURES / "job2_rank0.json.gz"))
