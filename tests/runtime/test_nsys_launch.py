"""The job-side nsys launch wrapper (``bridge-plugins-nsys``): options fitted to the nsys where the
job runs, with the real nsys 2022.4 (Debian's, scripts/install_nsys.sh) and a newer one stood in
by tests/helpers/fake_nsys."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bridge_plugins.runtime.entry.nsys_launch import probe
from bridge_plugins.runtime.nsys_options import NsysHelp, OptionsError, parse_help, plan, split_command
from tests.support import NSYS_DEFAULTS, REAL_NSYS, stand_in_nsys, system_path_without_nsys

WRAPPER = str(Path(sys.executable).parent / "bridge-plugins-nsys")
NEMO_RUN_PREFIX = ["profile", "-s", "none", "-t", "nvtx,cuda", "-o", "/j/nsys_profile/profile_%p", *NSYS_DEFAULTS]
COMMAND = ["torchrun", "--nproc-per-node", "2", "-m", "x", ""]


def names(options):
    return [" ".join(o.tokens) for o in options]


@pytest.fixture(scope="module")
def real_nsys() -> NsysHelp:
    if REAL_NSYS is None:
        pytest.skip("no /usr/bin/nsys: run scripts/install_nsys.sh (Debian's Nsight Systems 2022.4)")
    return probe(REAL_NSYS)


def test_real_2022_4_drops_only_the_newer_option_and_captures_the_nvtx_window_without_gpu(real_nsys):
    assert real_nsys.version.startswith("2022.4"), real_nsys.version
    options, command = split_command([*NEMO_RUN_PREFIX, *COMMAND], real_nsys)
    assert command == COMMAND
    chosen = plan(options, real_nsys, gpu=False)
    assert names(chosen.dropped) == ["--cuda-event-trace=false"]
    assert chosen.argv(command) == [
        "profile",
        "-s",
        "none",
        "-t",
        "nvtx,cuda",
        "-o",
        "/j/nsys_profile/profile_%p",
        "--force-overwrite=true",
        "--capture-range-end=stop",
        "--cuda-graph-trace=node",
        "--capture-range=nvtx",
        "--nvtx-capture=bridge_plugins.window",
        "--cpuctxsw=none",
        *COMMAND,
    ]
    assert chosen.env == {"NSYS_NVTX_PROFILER_REGISTER_ONLY": "0"}


def test_real_2022_4_with_a_gpu_keeps_cuda_profiler_api(real_nsys):
    options, _ = split_command([*NEMO_RUN_PREFIX, *COMMAND], real_nsys)
    chosen = plan(options, real_nsys, gpu=True)
    assert "--capture-range=cudaProfilerApi" in names(chosen.options) and not chosen.cpu_capture
    assert names(chosen.dropped) == ["--cuda-event-trace=false"] and chosen.env == {}


def test_real_2022_4_knows_the_short_names_and_the_include_exclude_pair(real_nsys):
    assert real_nsys.long_name("-o") == "--output" and real_nsys.long_name("-p") == "--nvtx-capture"
    assert real_nsys.knows("--nvtx-domain-include") and real_nsys.knows("--nvtx-domain-exclude")
    assert not real_nsys.knows("--gpu-metrics-devices")  # 2022.4 spells it --gpu-metrics-device


def test_an_option_the_window_needs_fails_in_one_line():
    old = NsysHelp(version="2019.1", long_names=frozenset({"--output", "--trace", "--sample"}))
    options, _ = split_command([*NEMO_RUN_PREFIX, *COMMAND], old)
    with pytest.raises(OptionsError) as raised:
        plan(options, old, gpu=True)
    message = str(raised.value)
    assert "\n" not in message and "2019.1 does not know --capture-range" in message and "2022.4 or newer" in message


def test_an_unknown_option_without_equals_is_refused_rather_than_guessed():
    help_ = parse_help("\t-o, --output=\n\t-t, --trace=\n", "2022.4")
    with pytest.raises(OptionsError, match="write it as --new-flag=VALUE"):
        split_command(["profile", "-o", "x", "--new-flag", "v", "python"], help_)


def run_wrapper(tmp_path, *args, gpu: str, path: str):
    log = tmp_path / "nsys_log"
    log.mkdir(exist_ok=True)
    env = {"PATH": path, "FAKE_NSYS_LOG": str(log), "BRIDGE_PLUGINS_NSYS_GPU": gpu, "HOME": str(tmp_path)}
    proc = subprocess.run([WRAPPER, *args], env=env, capture_output=True, text=True, timeout=120)
    records = [json.loads(p.read_text()) for p in log.iterdir()]
    return proc, records


@pytest.mark.parametrize("gpu", ["1", "0"])
def test_a_newer_nsys_stand_in_gets_every_option(tmp_path, gpu):
    bindir, _ = stand_in_nsys(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    prefix = ["profile", "-s", "none", "-t", "nvtx,cuda", "-o", f"{out}/r%p", *NSYS_DEFAULTS]
    proc, records = run_wrapper(
        tmp_path, *prefix, "/bin/echo", "ran", gpu=gpu, path=f"{bindir}:{system_path_without_nsys()}"
    )
    assert proc.returncode == 0 and proc.stdout == "ran\n", proc.stderr
    (record,) = records
    if gpu == "1":
        assert record["options"] == prefix[1:] and proc.stderr == ""
    else:
        assert "--cuda-event-trace=false" in record["options"] and "--capture-range=nvtx" in record["options"]
        assert "--capture-range=cudaProfilerApi" not in record["options"]
        (line,) = proc.stderr.splitlines()
        assert line.startswith("[bridge_plugins] nsys: no GPU on ") and "bridge_plugins.window" in line
    assert record["command"] == ["/bin/echo", "ran"]


def test_without_nsys_the_wrapper_says_so_in_one_line(tmp_path):
    proc, _ = run_wrapper(tmp_path, *NEMO_RUN_PREFIX, "true", gpu="1", path=system_path_without_nsys())
    assert proc.returncode == 127
    (line,) = proc.stderr.splitlines()
    assert line.startswith("[bridge_plugins] nsys: error on ") and "no 'nsys' binary on PATH" in line
