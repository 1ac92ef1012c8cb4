"""``summary`` and ``diagnose`` over every trace we can find or make, each with the cause it is known for.

The real GPU traces (shared/fixtures/gpu-traces), the public traces recorded by others
(shared/fixtures/public-traces: ROCm, MTIA, CPU-only, Triton, NCCL, CUPTI...), our torch 1.8/1.9
fixtures, and job2/job128 in the 1.9 format made input-bound or "with workers"
(tests/fixtures/old_format.py). The recipe's planted causes on CPU traces (``--inject``) are in
test_findings.py. Each entry is the findings' kinds in rank order: the first is the known cause;
``[]`` is a trace with nothing to flag. Why each cause is the right one: docs/diagnose.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.analysis.gpu_traces import FIXTURES
from tests.fixtures.old_format import load, save, to_old_format, with_data_loading

PUBLIC = FIXTURES.parent / "public-traces"
OLD = Path(__file__).parents[1] / "fixtures" / "old_format"
JOB128 = ["exposed_communication", "memcpy", "sync_point"]  # 85 % of communication exposed
JOB2 = ["host_bound", "fp32_gemm", "small_kernels", "sync_point"]  # launch-bound; TF32 GEMMs on an A100
KNOWN = {
    "gpu/job128_rank0.json.gz": JOB128,
    "gpu/job128_rank1.json.gz": ["exposed_communication", "sync_point", "memcpy"],  # alone: no rank to straggle behind
    "gpu/job2_rank0.json.gz": JOB2,
    "public/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz": ["host_bound"],  # a GPU idle between tiny steps
    "public/cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz": [],  # waits in gloo:all_reduce: no GPU, no finding
    "public/critical_path__cuda_event_sync__event_sync_trace.json.gz": [
        "host_bound",
        "sync_point",
        "small_kernels",
        "memcpy",
    ],
    "public/cupti_profiler__benchmark_result_924719_1679055439_trace.json.gz": ["memcpy"],  # a blocking cudaMemcpy
    "public/mtia_inference_trace__mtia_inference_rank_0.json.gz": [],  # neither CUDA nor HIP: nothing we can judge
    "public/nccl_parser_config__nccl_data.json.gz": JOB2,  # job2's bytes
    "public/negative_queue_length_values_check__rank0.json.gz": [
        "sync_point",
        "exposed_communication",
        "fp32_gemm",
        "memcpy",
    ],
    "public/ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz": ["small_kernels", "fp32_gemm"],  # V100
    "public/timeline_analysis__sampled_rank-0.json.gz": JOB128,  # job128 rank 0's bytes
    "public/triton_example__triton_example.json.gz": ["sync_point"],  # one cudaDeviceSynchronize
    "old/job128_torch18_rank0.json.gz": JOB128,
    "old/job128_torch19_rank0.json.gz": JOB128,
    # the steps now 1.5x as long, its fp32 GEMMs are 4 % of a step: under fp32_gemm's 5 % bar
    "made/job2_19_input_bound": ["input_bound", "host_bound", "small_kernels", "sync_point"],
    "made/job2_19_with_workers": JOB2,
    "made/job128_19_input_bound": ["input_bound", *JOB128],
}


def _path(key: str, tmp: Path) -> Path:
    where, name = key.split("/")
    if where != "made":
        return {"gpu": FIXTURES, "public": PUBLIC, "old": OLD}[where] / name
    job, _, variant = name.split("_", 2)
    trace = to_old_format(load(FIXTURES / f"{job}_rank0.json.gz"))
    return save(with_data_loading(trace, 1 / 3 if variant == "input_bound" else 0.01), tmp / "rank0.json.gz")


def _cli(*args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "bridge_plugins", *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.slow  # 18 traces through two commands each (~1 min)
@pytest.mark.parametrize("key", KNOWN)
def test_every_trace_we_have_is_read_and_diagnosed_with_its_known_cause(key, tmp_path):
    path = _path(key, tmp_path)
    (trace,) = _cli("summary", "--json", str(path))["traces"]
    assert len(trace["per_step"]) == trace["steps"]["count"]
    if "old/" in key or "made/" in key:  # the old format's ProfilerStep#N are Operators: read as steps
        assert trace["steps"]["count"] >= 2
    kinds = [f["kind"] for f in _cli("diagnose", "--json", str(path))["findings"]]
    assert kinds == KNOWN[key]
