"""scripts/setup.sh picks the torch build that fits the machine, and says which and why (--plan: no install).

The machine is described to the script the way it finds out: an ``nvidia-smi`` on PATH that works
(a stand-in printing a GPU) or fails (a stand-in exiting 9, as with no driver loaded), and the
CPU wheel index at TORCH_CPU_INDEX, reachable (a real HTTP server on this machine) or not (a
closed port).
"""

from __future__ import annotations

import functools
import os
import subprocess
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.support import ROOT, free_port


def plan(tmp_path: Path, nvidia_smi: str, cpu_index: str) -> subprocess.CompletedProcess:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\n{nvidia_smi}\n")
    smi.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "BRIDGE_TORCH"}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", TORCH_CPU_INDEX=cpu_index)
    proc = subprocess.run(
        ["bash", "scripts/setup.sh", "--plan"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


@pytest.fixture
def reachable_index(tmp_path):
    """An index served over HTTP on 127.0.0.1 (a directory with torch/ in it)."""
    (tmp_path / "index" / "torch").mkdir(parents=True)
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(tmp_path / "index"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_with_an_nvidia_driver_it_installs_the_cuda_build(tmp_path, reachable_index):
    proc = plan(tmp_path, 'echo "GPU 0: NVIDIA H200 (UUID: GPU-0)"', reachable_index)
    assert "NVIDIA driver found" in proc.stdout and "NVIDIA H200" in proc.stdout and "CUDA build" in proc.stdout
    assert "~2.7 GB" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == "pip install torch==2.13.0"


def test_without_a_driver_it_installs_the_cpu_build_from_the_cpu_index(tmp_path, reachable_index):
    index = reachable_index
    proc = plan(
        tmp_path, "echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver'; exit 9", index
    )
    assert "no NVIDIA driver" in proc.stdout and "CPU build" in proc.stdout and "~190 MB" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == f"pip install --index-url {index} torch==2.13.0"


def test_an_unreachable_cpu_index_falls_back_to_what_pip_is_configured_with(tmp_path):
    proc = plan(tmp_path, "exit 9", f"http://127.0.0.1:{free_port()}/whl/cpu")
    assert "unreachable" in proc.stdout and "pip's configuration" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == "pip install torch==2.13.0"
    local_cpu_wheels = list(Path("/opt/wheels").glob("torch-2.13.0+cpu-*.whl"))
    if local_cpu_wheels:  # this machine: PyPI plus a local CPU wheel, which the script names
        assert "offers a CPU build (2.13.0+cpu from file:///opt/wheels/" in proc.stdout
    else:  # plain PyPI: it warns about the CUDA build's size before installing it
        assert "CUDA build" in proc.stdout or "found no torch" in proc.stdout
