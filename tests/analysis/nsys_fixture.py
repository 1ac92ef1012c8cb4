"""The real nsys export (``shared/fixtures/nsys``) and a stand-in made from it with steps and NCCL.

The real export (nsys 2022.2, saxpy over MPI on an A100) has no NVTX step ranges and no
communication kernels. ``with_steps_and_nccl`` copies it and adds, with SQL, what a PyTorch job
profiled by nsys would add: ``ProfilerStep#<N>`` ranges around each of the 5 iterations (inline
text and ``StringIds`` names, one ``step <N>``) and an NCCL kernel beside each saxpy kernel,
overlapping it by half. A stand-in (no GPU here to record one); every other row is the real file's.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
from pathlib import Path

import pytest

SHARED = Path(os.environ.get("BRIDGE_SHARED") or Path(__file__).resolve().parents[3] / "shared")
NSYS_FIXTURES = SHARED / "fixtures" / "nsys"
SAXPY = NSYS_FIXTURES / "saxpy-mpi-cuda_nsys_perlmutter0.sqlite"
NCCL_NAME = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm *, ncclDevWorkColl *)"
FIRST_STEP = 10


def need_fixture() -> None:
    if not SAXPY.is_file():
        pytest.skip(f"{SAXPY} missing: the repo's shared/ folder is not beside it")


def copy_of(src: Path, dst: Path) -> Path:
    shutil.copyfile(src, dst)
    dst.chmod(stat.S_IRUSR | stat.S_IWUSR)
    return dst


def step_bounds(conn: sqlite3.Connection) -> list[tuple[int, int]]:
    """Each iteration as (start, end) ns: from 50 ms before its launch to 50 ms before the next one's."""
    launches = [r[0] for r in conn.execute("SELECT start FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start")]
    last_end = conn.execute("SELECT max(end) FROM CUPTI_ACTIVITY_KIND_MEMCPY").fetchone()[0]
    starts = [t - 50_000_000 for t in launches]
    return list(zip(starts, [*starts[1:], last_end + 1_000_000], strict=True))


def with_steps_and_nccl(dst: Path) -> Path:
    """The stand-in (module docstring) at ``dst``."""
    copy_of(SAXPY, dst)
    with sqlite3.connect(dst) as conn:
        tid = conn.execute("SELECT globalTid FROM NVTX_EVENTS LIMIT 1").fetchone()[0]
        next_id = conn.execute("SELECT max(id) + 1 FROM StringIds").fetchone()[0]
        for i, (start, end) in enumerate(step_bounds(conn)):
            n = FIRST_STEP + i
            name = f"ProfilerStep#{n}" if i < 4 else f"step {n}"
            text, text_id = (name, None) if i % 2 == 0 else (None, next_id)
            if text_id is not None:
                conn.execute("INSERT INTO StringIds VALUES (?, ?)", (next_id, name + (", seq = 7" if i == 3 else "")))
                next_id += 1
            conn.execute(
                "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId) VALUES (?, ?, 59, ?, ?, ?)",
                (start, end, text, tid, text_id),
            )
        conn.execute("INSERT INTO StringIds VALUES (?, ?)", (next_id, NCCL_NAME))
        conn.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT start + (end - start) / 2, end + (end - start) / 2, deviceId, "
            "contextId, streamId + 1, NULL, globalPid, ?, ?, mangledName, launchType, cacheConfig, registersPerThread, "
            "gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, "
            "localMemoryPerThread, localMemoryTotal, gridId, sharedMemoryExecuted, graphNodeId, sharedMemoryLimitConfig "
            "FROM CUPTI_ACTIVITY_KIND_KERNEL",
            (next_id, next_id),
        )
    return dst
