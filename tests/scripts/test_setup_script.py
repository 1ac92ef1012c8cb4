"""scripts/setup.sh picks the torch build that fits the machine, and says which and why (--plan: no install).

The machine is described to the script the way it finds out: an ``nvidia-smi`` on PATH that works
(a stand-in printing a GPU) or fails (a stand-in exiting 9, as with no driver loaded), and the
CPU wheel index at TORCH_CPU_INDEX, reachable (a real HTTP server on this machine) or not (a
closed port).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
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


# ----------------------------------------------------------------------------- apt (system packages)
APT_PACKAGES = ["slurm-wlm", "slurmdbd", "munge", "mariadb-server", "iproute2", "chromium", "fonts-dejavu-core"]
"""What scripts/slurm/up.sh and scripts/install_chromium.sh install with scripts/apt_install.sh."""


def _installed(package: str) -> bool:
    proc = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True)
    return "install ok installed" in proc.stdout


@pytest.mark.skipif(
    shutil.which("apt-get") is None or os.geteuid() != 0 or not list(Path("/var/lib/apt/lists").glob("*_Packages*")),
    reason="needs apt-get, root and package lists (a Debian machine)",
)
def test_apt_install_leaves_installed_packages_alone_and_announces_each_upgrade_it_cannot_avoid():
    """A dry run (apt-get -s: nothing changes): an installed package named is not upgraded, no
    recommends come along, and every upgrade apt still makes (a new package needing a newer
    version of an installed one: CI's perl) is named before the install."""
    proc = subprocess.run(
        ["bash", "scripts/apt_install.sh", *APT_PACKAGES],
        cwd=ROOT,
        env={**os.environ, "APT_SIMULATE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    missing = [p for p in APT_PACKAGES if not _installed(p)]
    present = [p for p in APT_PACKAGES if p not in missing]
    inst = dict(re.findall(r"^Inst (\S+) (\[[^\]]*\])?", proc.stdout, re.M))
    if not missing:
        assert proc.stdout.startswith("[apt] already installed:") and not inst
        return
    assert f"[apt] installing {' '.join(missing)} (not their recommends)" in proc.stdout
    assert not [p for p in present if p in inst], "an installed package named is left as it is"
    upgraded = sorted(name for name, old in inst.items() if old)
    announced = re.search(
        r"^\[apt\] .* also upgrades, because the new packages need newer versions of them: (.*)$", proc.stdout, re.M
    )
    assert sorted(announced.group(1).split() if announced else []) == upgraded, proc.stdout
    with_recommends = subprocess.run(
        ["apt-get", "-s", "install", "-y", *missing], capture_output=True, text=True, timeout=300
    ).stdout
    if "Recommended packages:" in proc.stdout:
        assert len(inst) < with_recommends.count("\nInst "), "recommends are left out"


@pytest.mark.slow  # a pip install into a scratch venv: about 30 s
def test_the_editable_install_shows_no_setuptools_box(tmp_path):
    """setup.sh's install of this checkout (its install_checkout function), into a scratch venv with
    the pip setup.sh upgrades to: pip >= 24 passes setuptools' 'Editable installation' box through."""
    copy = tmp_path / "checkout"
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    upgrade = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--upgrade", "pip>=24"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if upgrade.returncode != 0:
        pytest.skip(f"no pip >= 24 to be had here: {upgrade.stderr.strip()[-300:]}")
    script = (
        f'source <(sed -n "/^install_checkout()/,/^}}/p" {ROOT}/scripts/setup.sh) && '
        f"PY={venv}/bin/python && cd {copy} && install_checkout --no-deps -e ."
    )
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Editable installation" not in proc.stderr and "!!" not in proc.stderr, proc.stderr
    imported = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import bridge_plugins.jobdir.names as m; print(m.__file__)"],
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        capture_output=True,
        text=True,
    )
    assert imported.stdout.strip() == str(copy / "bridge_plugins" / "jobdir" / "names.py"), imported.stderr


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed (scripts/install_chromium.sh)")
def test_install_chromium_asks_the_browser_for_its_version_without_the_wrapper_noise():
    """Debian's /usr/bin/chromium wrapper prints '[: <n>: unexpected operator' where findmnt lists
    /dev/shm twice; the script's last line used to show it on a fresh install."""
    script = f'source <(sed -n "/^version()/,/^}}/p" {ROOT}/scripts/install_chromium.sh) && version'
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("Chromium "), proc.stdout + proc.stderr
    assert proc.stderr == "", proc.stderr
    already = subprocess.run(["bash", "scripts/install_chromium.sh"], cwd=ROOT, capture_output=True, text=True)
    assert already.returncode == 0 and already.stderr == "", already.stderr
    assert already.stdout.startswith("[chromium] already installed: Chromium ")
