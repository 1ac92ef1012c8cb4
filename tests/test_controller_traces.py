"""What the traces hold beyond the steps: metadata for readers (issue 10.3) and Megatron Bridge's
collection switches (issue 9: shapes, call stacks, Chakra execution traces). Real model, real
torch.profiler, traces read back from disk."""

from __future__ import annotations

import gzip
import json
import re

from bridge_plugins import ProfilingConfig, ProfilingController
from bridge_plugins.artifact_names import parse
from tests.support import trace_steps
from tests.test_controller import run_loop, train_step  # noqa: F401 (fixture)


def load(path):
    with (gzip.open(path, "rt") if str(path).endswith(".gz") else open(path)) as f:
        return json.load(f)


def test_trace_carries_distributed_info_and_the_window_without_a_process_group(tmp_path, train_step, monkeypatch):  # noqa: F811
    for var in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SLURM_PROCID", "3")  # a plain srun task: no torchrun, no process group
    monkeypatch.setenv("SLURM_STEP_NUM_TASKS", "4")
    cfg = ProfilingConfig(use_pytorch_profiler=True, profile_step_start=2, profile_step_end=6, profile_ranks=[3],
                          output_dir=str(tmp_path))
    ctl = run_loop(ProfilingController(cfg), train_step, range(5))  # ends inside the window: captured 2-4
    (path,) = ctl.artifacts
    trace = load(path)
    assert trace["distributedInfo"] == {"rank": 3, "world_size": 4}
    meta = trace["bridge_plugins"]
    assert meta["window"] == [2, 5] and meta["captured"] == [2, 4]
    assert (meta["rank"], meta["world_size"]) == (3, 4)
    assert meta["config"]["profile_ranks"] == [3] and meta["config"]["use_pytorch_profiler"] is True
    assert trace_steps(path) == {2, 3, 4}


def events(path):
    return load(path)["traceEvents"]


def test_megatron_bridge_shape_and_callstack_switches_reach_the_profiler(tmp_path, train_step):  # noqa: F811
    def run(sub, **kw):
        cfg = ProfilingConfig(use_pytorch_profiler=True, profile_step_start=0, profile_step_end=1,
                              output_dir=str(tmp_path / sub), **kw)
        return events(run_loop(ProfilingController(cfg, rank=0), train_step, range(1)).artifacts[0])

    def has_shapes(evs):
        return any("Input Dims" in (e.get("args") or {}) for e in evs)

    def has_stacks(evs):  # with_stack: Python function events (ph X, cat python_function)
        return any(e.get("cat") == "python_function" for e in evs)

    plain, shapes, stacks = run("plain"), run("shapes", pytorch_profiler_collect_shapes=True), \
        run("stacks", pytorch_profiler_collect_callstack=True)
    assert not has_shapes(plain) and not has_stacks(plain)
    assert has_shapes(shapes) and not has_stacks(shapes)
    assert has_stacks(stacks) and not has_shapes(stacks)


STEP = re.compile(r"^ProfilerStep#(\d+)$")


def test_chakra_execution_trace_beside_the_kineto_trace_holds_the_window_only(tmp_path, train_step):  # noqa: F811
    cfg = ProfilingConfig(use_pytorch_profiler=True, pytorch_profiler_collect_chakra=True, profile_step_start=2,
                          profile_step_end=4, output_dir=str(tmp_path))
    ctl = run_loop(ProfilingController(cfg, rank=0), train_step, range(6))
    kinds = {parse(p).kind: p for p in ctl.artifacts}
    assert set(kinds) == {"torch_trace", "chakra_trace"}
    chakra = kinds["chakra_trace"]
    assert chakra.name == "rank0_steps2-3.chakra.json" and chakra.parent == kinds["torch_trace"].parent
    nodes = load(chakra)["nodes"]  # parses as complete JSON
    steps = {int(m.group(1)) for n in nodes if (m := STEP.match(n["name"]))}
    assert steps == {2, 3}
    assert any(n["name"].startswith("aten::") for n in nodes)
    assert sorted(p.name for p in chakra.parent.iterdir()) == ["rank0_steps2-3.chakra.json",
                                                               "rank0_steps2-3.pt.trace.json.gz"]


def test_chakra_without_the_pytorch_profiler_is_warned_about(tmp_path, train_step, caplog):  # noqa: F811
    cfg = ProfilingConfig(record_memory_history=True, pytorch_profiler_collect_chakra=True, profile_step_start=0,
                          profile_step_end=1, output_dir=str(tmp_path))
    run_loop(ProfilingController(cfg, rank=0), train_step, range(2))
    assert any("collect_chakra=True needs use_pytorch_profiler=True" in r.getMessage() for r in caplog.records)
    assert not list(tmp_path.rglob("*.chakra.json"))
