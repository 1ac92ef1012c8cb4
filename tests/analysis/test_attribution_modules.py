"""Which ``nn.Module`` owns the GPU time: the innermost module frame (traces recorded with_stack)
running on the launching thread when each kernel was launched.

No GPU trace recorded with stacks exists here (the shared GPU fixtures were recorded without
them), so the two halves are checked apart: the module found for a CPU moment, on a real CPU
trace of the recipe recorded with_stack; the join from kernel to launch call to module, on a
small hand-made trace (a stand-in for a GPU one) whose answer is known."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from bridge_plugins import ProfilingConfig, ProfilingController
from bridge_plugins.analysis.analyzers.attribution import MODULE_PREFIX, modules_at
from bridge_plugins.analysis.pipeline import summarize
from bridge_plugins.analysis.trace.collect import Collector, Event
from bridge_plugins.analysis.trace.reader import read_trace
from recipes.config import ModelConfig
from recipes.model import build_training, train_step


@pytest.fixture(scope="module")
def with_stack_trace(tmp_path_factory) -> Path:
    """A real CPU trace of the recipe's steps 1-2, recorded with Python stacks."""
    out = tmp_path_factory.mktemp("with_stack")
    torch.manual_seed(0)
    model, opt, data = build_training(
        ModelConfig(hidden_size=32, num_layers=1, num_heads=2), 16, 2, torch.device("cpu")
    )
    cfg = ProfilingConfig(
        output_dir=str(out),
        use_pytorch_profiler=True,
        profile_step_start=1,
        profile_step_end=3,
        pytorch_profiler_with_stack=True,
    )
    with ProfilingController(cfg, rank=0) as ctl:
        for i in range(4):
            with ctl.step(i):
                train_step(model, opt, data)
    (trace,) = [p for p in out.rglob("*") if p.is_file() and ".json" in p.name]
    return trace


def _collected(path: Path):
    c = Collector()
    read_trace(path, c.on_header, c.on_event, Event, c.on_records)
    return c.data


def test_the_module_running_each_forward_op_on_a_real_trace(with_stack_trace):
    d = _collected(with_stack_trace)
    owner_of: dict[str, set[str]] = {}
    for key, ts, dur, ids in d.thread_ops():
        thread = np.full(len(ts), d.threads.index(key))
        middles = np.asarray(ts) + np.asarray(dur) / 2  # each op's middle
        found = modules_at(d, thread, middles, np.arange(len(middles)))
        assert found is not None, "a trace recorded with_stack has module frames"
        for op, module in zip(np.asarray(ids).tolist(), found.tolist(), strict=True):
            if module >= 0:
                owner_of.setdefault(d.names[op], set()).add(d.names[module].removeprefix(MODULE_PREFIX))
    kinds = {op: {m.rsplit("_", 1)[0] for m in mods} for op, mods in owner_of.items()}
    # the innermost module of each forward op is the layer that runs it
    assert kinds["aten::embedding"] == {"Embedding"}
    assert kinds["aten::layer_norm"] == {"LayerNorm"}
    assert kinds["aten::gelu"] == {"GELU"}
    assert kinds["aten::linear"] == {"Linear"}
    # two steps captured, the same layers each time: every Linear of the model is found
    linears = {m for m in owner_of["aten::linear"]}
    assert len(linears) == 4, linears  # qkv, proj, and the MLP's two (lm_head is a matmul, outside a Linear)


def test_a_trace_without_stacks_has_no_module_answer(tmp_path):
    from tests.analysis.gpu_traces import J128

    d = _collected(Path(J128[0]))
    assert modules_at(d, np.zeros(1, dtype=np.int64), np.zeros(1), np.zeros(1, dtype=np.int64)) is None


def _event(cat: str, name: str, ts: float, dur: float, tid: int = 1, **args) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _stand_in_trace(tmp_path: Path) -> Path:
    """Stand-in for a GPU trace recorded with_stack: two modules, one nested in the other, three
    kernels (300 us launched inside Linear_0, 120 us inside Block_0 only, 30 us outside both)."""
    events = [
        _event("user_annotation", "ProfilerStep#1", 0, 1000),
        _event("python_function", "nn.Module: Block_0", 10, 500, **{"Python id": 1}),
        _event("python_function", "nn.Module: Linear_0", 20, 100, **{"Python id": 2, "Python parent id": 1}),
        _event("cpu_op", "aten::linear", 25, 80),
        _event("cuda_runtime", "cudaLaunchKernel", 30, 5, correlation=1),
        _event("cpu_op", "aten::gelu", 200, 50),
        _event("cuda_runtime", "cudaLaunchKernel", 210, 5, correlation=2),
        _event("cpu_op", "aten::add", 700, 50),  # outside every module
        _event("cuda_runtime", "cudaLaunchKernel", 710, 5, correlation=3),
    ]
    for corr, (ts, dur) in enumerate([(40, 300), (350, 120), (720, 30)], start=1):
        events.append(
            {"ph": "X", "cat": "kernel", "name": f"k{corr}", "pid": 0, "tid": 7, "ts": ts, "dur": dur,
             "args": {"correlation": corr, "stream": 7, "device": 0}}
        )  # fmt: skip
    path = tmp_path / "rank0.pt.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events, "distributedInfo": {"rank": 0}}).encode()))
    return path


@pytest.fixture
def stand_in(tmp_path) -> Path:
    return _stand_in_trace(tmp_path)


def test_gpu_time_goes_to_the_module_whose_frame_was_running_at_the_launch(stand_in):
    """Each kernel's time goes to the innermost module running when its launch call ran."""
    path = stand_in
    (t,) = summarize([path], top=None).traces
    a = t.analyses.attribution
    assert [(m.name, m.gpu_us, m.gpu_events) for m in a.modules] == [
        ("nn.Module: Linear_0", 300.0, 1),
        ("nn.Module: Block_0", 120.0, 1),
    ]
    assert [(o.name, o.gpu_us) for o in a.top_level_ops] == [
        ("aten::linear", 300.0),
        ("aten::gelu", 120.0),
        ("aten::add", 30.0),
    ]
    assert a.note is None and a.attributed_us == 450.0 and a.unattributed_us == 0.0


def test_the_terminal_and_the_report_name_the_modules(stand_in, tmp_path):
    import subprocess
    import sys

    from tests.support import ROOT, clean_env

    env = clean_env(PYTHONPATH=str(ROOT), COLUMNS="200")
    out = subprocess.run(
        [sys.executable, "-m", "bridge_plugins", "summary", str(stand_in)], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    (line,) = [x for x in out.stdout.splitlines() if "GPU time by module" in x]
    assert "Linear_0 0.30 ms; Block_0 0.12 ms" in line, line
    html = tmp_path / "report.html"
    r = subprocess.run(
        [sys.executable, "-m", "bridge_plugins", "report", str(stand_in), "-o", str(html)], env=env, capture_output=True
    )
    assert r.returncode == 0, r.stderr
    assert "GPU time by module" in html.read_text() and "Linear_0 0.30 ms; Block_0 0.12 ms" in html.read_text()
