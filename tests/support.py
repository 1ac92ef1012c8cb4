"""Test helpers shared by the test modules: reading traces back, launching real jobs cleanly."""

from __future__ import annotations

import gzip
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent

# Variables a torchrun worker (or a Slurm task) leaves in the environment. A job started from
# inside one must not inherit them, or it joins the parent's rendezvous (notes/torch-profiler.md).
DIST_VARS = (
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK", "ROLE_WORLD_SIZE",
    "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_RESTART_COUNT",
    "TORCHELASTIC_RUN_ID", "TORCHELASTIC_MAX_RESTARTS", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID",
    "SLURM_RESTART_COUNT",
)

STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")


def trace_steps(path: Path) -> Set[int]:
    """The global step numbers of the ``ProfilerStep#N`` annotations in a (gzip) Chrome trace."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        data = json.load(f)
    steps = set()
    for ev in data["traceEvents"]:
        m = STEP_RE.match(str(ev.get("name", "")))
        if m:
            steps.add(int(m.group(1)))
    return steps


def trace_files(output_dir: Path) -> Dict[int, List[Path]]:
    """Traces under output_dir/torch_profile, keyed by the rank in their name."""
    found: Dict[int, List[Path]] = {}
    for p in sorted((Path(output_dir) / "torch_profile").glob("*.pt.trace.json.gz")):
        rank = int(re.match(r"rank(\d+)_", p.name).group(1))
        found.setdefault(rank, []).append(p)
    return found


FAKE_NSYS = ROOT / "tests" / "helpers" / "fake_nsys"


def stand_in_nsys(tmp_path: Path) -> Tuple[Path, Path]:
    """A bin dir holding the stand-in ``nsys`` (tests/helpers/fake_nsys), and the dir it records
    each invocation in: put the first on the job's PATH, the second in FAKE_NSYS_LOG."""
    bin_dir, log_dir = tmp_path / "bin", tmp_path / "nsys_log"
    bin_dir.mkdir()
    log_dir.mkdir()
    (bin_dir / "nsys").symlink_to(FAKE_NSYS)
    return bin_dir, log_dir


def clean_env(**extra: str) -> Dict[str, str]:
    """os.environ without distributed variables, with the venv's bin first on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in DIST_VARS}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{env['PYTHONPATH']}" if env.get("PYTHONPATH") else str(ROOT)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun_cmd(nproc: int, module_args: List[str]) -> List[str]:
    """torchrun on a free port (the fixed default 29500 collides between overlapping runs)."""
    return [
        str(VENV_BIN / "torchrun"), "--nnodes", "1", "--nproc-per-node", str(nproc),
        "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{free_port()}", *module_args,
    ]


def run_job(cmd: List[str], cwd: Optional[Path] = None, timeout: int = 240, **env: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd or ROOT, env=clean_env(**env), capture_output=True, text=True, timeout=timeout)
    return proc


def has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


requires_cuda = pytest.mark.skipif(
    not has_cuda(), reason="needs CUDA (memory snapshots, CUDA kernels, cudaProfilerStart); none on this machine"
)
