"""GPU-only behaviour: memory snapshots, CUDA kernels in traces, cudaProfilerStart/Stop.

Skipped without CUDA (this repository's CI has no GPU). Run on a GPU machine with
``python -m pytest tests/runtime/test_gpu.py``; these tests import neither nemo_run nor omegaconf, so
they run on a bare PyTorch install.
"""

from __future__ import annotations

import gzip
import json
import pickle

import pytest
import torch

from bridge_plugins import ProfilingConfig, ProfilingController
from recipes.config import ModelConfig
from recipes.model import build_training, train_step
from tests.support import requires_cuda, trace_files, trace_steps

pytestmark = [pytest.mark.gpu, requires_cuda]


def train(ctl, steps):
    """Build the model inside the controller (as pretrain does) and run ``steps``."""
    dev = torch.device("cuda")
    with ctl:
        model, opt, data = build_training(ModelConfig(hidden_size=128, num_layers=2, num_heads=4), 64, 8, dev)
        for i in steps:
            with ctl.step(i):
                train_step(model, opt, data)
        torch.cuda.synchronize()
    return ctl


def test_pytorch_trace_has_cuda_kernels_for_exactly_the_window(tmp_path):
    ctl = train(
        ProfilingController(
            ProfilingConfig(
                use_pytorch_profiler=True, profile_step_start=3, profile_step_end=6, output_dir=str(tmp_path)
            ),
            rank=0,
        ),
        range(8),
    )
    path = trace_files(tmp_path)[0][0]
    assert trace_steps(path) == {3, 4, 5}
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert len(kernels) > 20, "expected CUDA kernels in the trace"
    assert ctl.artifacts == [path]
    # the last step completes on the GPU before the profiler stops: every step launches as many
    # kernels as the others (a cut-off last step has fewer)
    steps = {e["name"]: (e["ts"], e["ts"] + e["dur"]) for e in events if str(e.get("name", "")).startswith("Prof")}
    launches = {e["args"]["correlation"]: e["ts"] for e in events if e.get("cat") == "cuda_runtime"}
    per_step = {name: 0 for name in steps}
    for k in kernels:
        ts = launches.get(k["args"].get("correlation"))
        for name, (a, b) in steps.items():
            if ts is not None and a <= ts <= b:
                per_step[name] += 1
    assert len(set(per_step.values())) == 1, per_step


def test_memory_snapshot_contents_and_recording_stops(tmp_path):
    cfg = ProfilingConfig(
        record_memory_history=True,
        profile_step_start=2,
        profile_step_end=4,
        output_dir=str(tmp_path),
        memory_snapshot_path="snaps/mem.pickle",
    )
    ctl = ProfilingController(cfg, rank=0)
    train(ctl, range(6))
    snap_path = tmp_path / "snaps" / "mem_0.pickle"
    assert ctl.artifacts == [snap_path]
    raw = snap_path.read_bytes()
    assert raw[:2] == b"\x80\x04", "pickle protocol 4 (what memory_viz reads)"
    snap = pickle.loads(raw)
    assert snap["segments"], "allocator segments recorded"
    events = [e for trace in snap["device_traces"] for e in trace]
    assert any(e["action"] == "alloc" for e in events)
    frames = [fr["filename"] for e in events for fr in e.get("frames", [])]
    assert any(f.endswith("recipes/model.py") for f in frames), "Python stacks point into the model"
    # the model's parameters were allocated inside the controller, so their allocations are in the history
    assert len(events) > 100
    # recording stopped after the dump: new allocations are not added to the history
    before = sum(len(t) for t in torch.cuda.memory._snapshot()["device_traces"])
    x = torch.empty(1 << 20, device="cuda")
    after = sum(len(t) for t in torch.cuda.memory._snapshot()["device_traces"])
    del x
    assert after == before


def test_overlapping_memory_windows_share_the_recorder(tmp_path):
    """A configured window (steps 1-2) and a second one (steps 4-5, as an on-demand window is)
    both record; allocations after the first one's end are in the second one's snapshot, and
    recording stops after the last (tests/runtime/test_memory_recorder_shared.py, on CPU with a stand-in)."""

    def snapshot_cfg(start, end, name):
        return ProfilingConfig(
            record_memory_history=True,
            profile_step_start=start,
            profile_step_end=end,
            output_dir=str(tmp_path),
            memory_snapshot_path=name,
        )

    first = ProfilingController(snapshot_cfg(1, 3, "first.pickle"), rank=0)
    second = ProfilingController(snapshot_cfg(4, 6, "second.pickle"), rank=0, handle_sigterm=False)
    with second:
        train(first, range(3))
        marker = torch.empty(12345 * 512, dtype=torch.uint8, device="cuda")  # after the first window's end
        for i in range(3, 7):
            with second.step(i):
                pass
    del marker

    def sizes(name):
        snap = pickle.loads((tmp_path / name).read_bytes())
        return {e["size"] for trace in snap["device_traces"] for e in trace if e["action"] == "alloc"}

    assert 12345 * 512 not in sizes("first_0.pickle")
    assert 12345 * 512 in sizes("second_0.pickle"), "recording went on for the second window"
    before = sum(len(t) for t in torch.cuda.memory._snapshot()["device_traces"])
    x = torch.empty(1 << 20, device="cuda")
    assert sum(len(t) for t in torch.cuda.memory._snapshot()["device_traces"]) == before, "stopped after the last"
    del x


def test_out_of_memory_dumps_an_oom_snapshot(tmp_path):
    cfg = ProfilingConfig(
        record_memory_history=True, profile_step_start=50, profile_step_end=60, output_dir=str(tmp_path)
    )
    with ProfilingController(cfg, rank=0) as ctl:
        keep = torch.ones(1024, device="cuda")
        with pytest.raises(torch.cuda.OutOfMemoryError):
            torch.empty(1 << 50, dtype=torch.uint8, device="cuda")  # 1 PiB
        del keep
    names = sorted(p.name for p in ctl.artifacts)
    # the OOM dump, and the end-of-run dump because the window was never reached
    assert names == ["memory_snapshot_0.pickle", "memory_snapshot_oom_rank0.pickle"]
    snap = pickle.loads((tmp_path / "memory_snapshot_oom_rank0.pickle").read_bytes())
    assert snap["segments"]


def test_nsys_calls_cuda_profiler_start_and_stop_around_the_window(tmp_path, monkeypatch):
    cfg = ProfilingConfig(use_nsys_profiler=True, profile_step_start=2, profile_step_end=5, output_dir=str(tmp_path))
    ctl = ProfilingController(cfg, rank=0)
    calls = []
    real_start, real_stop = torch.cuda.profiler.start, torch.cuda.profiler.stop

    def spy_start():
        calls.append(("start", ctl._window.last_seen))  # the step being entered is recorded after this call
        real_start()

    def spy_stop():
        calls.append(("stop", ctl._window.last_seen))
        real_stop()

    monkeypatch.setattr(torch.cuda.profiler, "start", spy_start)
    monkeypatch.setattr(torch.cuda.profiler, "stop", spy_stop)
    train(ctl, range(7))
    # start when step 2 is entered (no step seen inside the window yet), stop after step 4
    assert calls == [("start", None), ("stop", 4)]
    nsys = ctl._window.backends[0]
    assert nsys.nvtx and nsys.ranges_emitted == 3  # one NVTX range per window step
    assert ctl.captured_steps == range(2, 5)


def test_nsys_per_op_nvtx_with_shapes_runs(tmp_path):
    cfg = ProfilingConfig(
        use_nsys_profiler=True, record_shapes=True, profile_step_start=1, profile_step_end=3, output_dir=str(tmp_path)
    )
    ctl = train(ProfilingController(cfg, rank=0), range(4))
    assert ctl.captured_steps == range(1, 3)
    assert not torch.autograd._profiler_enabled()  # emit_nvtx was closed with the window
