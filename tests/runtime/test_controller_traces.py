"""What the traces hold beyond the steps: metadata for readers (issue 10.3) and Megatron Bridge's
collection switches (issue 9: shapes, call stacks, Chakra execution traces). Real model, real
torch.profiler, traces read back from disk."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from bridge_plugins import ProfilingConfig, ProfilingController
from bridge_plugins.jobdir.names import parse
from tests.runtime.controller_support import run_loop
from tests.support import trace_steps


def load(path):
    with gzip.open(path, "rt") if str(path).endswith(".gz") else open(path) as f:
        return json.load(f)


def test_trace_carries_distributed_info_and_the_window_without_a_process_group(tmp_path, train_step, monkeypatch):
    for var in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SLURM_PROCID", "3")  # a plain srun task: no torchrun, no process group
    monkeypatch.setenv("SLURM_STEP_NUM_TASKS", "4")
    cfg = ProfilingConfig(
        use_pytorch_profiler=True, profile_step_start=2, profile_step_end=6, profile_ranks=[3], output_dir=str(tmp_path)
    )
    ctl = run_loop(ProfilingController(cfg), train_step, range(5))  # ends inside the window: captured 2-4
    (path,) = ctl.artifacts
    trace = load(path)
    assert trace["distributedInfo"] == {"rank": 3, "world_size": 4}
    meta = trace["bridge_plugins"]
    assert meta["window"] == [2, 5] and meta["captured"] == [2, 4]
    assert (meta["rank"], meta["world_size"]) == (3, 4)
    assert meta["config"]["profile_ranks"] == [3] and meta["config"]["use_pytorch_profiler"] is True
    assert trace_steps(path) == {2, 3, 4}


def test_config_values_json_would_escape_leave_the_trace_valid_json(tmp_path, train_step):
    """Kineto turns every backslash of a metadata value into '/': a path holding a double quote,
    a backslash or a non-ASCII letter once made the whole trace invalid JSON (seen on Slurm)."""
    awkward = "snaps dir; x/mem snap $HOME 'q' \"dq\" back\\slash.pickle"
    out = tmp_path / "répertoire"
    cfg = ProfilingConfig(
        use_pytorch_profiler=True,
        profile_step_start=1,
        profile_step_end=3,
        memory_snapshot_path=awkward,
        output_dir=str(out),
    )
    ctl = run_loop(ProfilingController(cfg), train_step, range(4))
    (path,) = ctl.artifacts
    meta = load(path)["bridge_plugins"]  # parses: nothing corrupted
    assert meta["config"]["output_dir"] == str(out)  # non-ASCII kept as UTF-8, no escape needed
    assert meta["percent_encoded"] == ["memory_snapshot_path"]
    from urllib.parse import unquote

    assert unquote(meta["config"]["memory_snapshot_path"]) == awkward
    assert trace_steps(path) == {1, 2}


def test_a_trace_whose_metadata_is_not_json_is_refused(tmp_path):
    """The check that stops such a trace from being published (what kineto made of a quote)."""
    from bridge_plugins.runtime.verify import check_kineto_header

    good = '{\n "schemaVersion": 1,\n "a": {"s": "q x"},\n "traceEvents": [\n {"ph": "X"}\n ],\n "traceName": "t"\n}'
    (tmp_path / "good.json").write_text(good)
    check_kineto_header(str(tmp_path / "good.json"))
    (tmp_path / "bad.json").write_text(good.replace('"q x"', '"a/"b"'))
    with pytest.raises(ValueError, match="metadata is not valid JSON"):
        check_kineto_header(str(tmp_path / "bad.json"))


def events(path):
    return load(path)["traceEvents"]


def test_megatron_bridge_shape_and_callstack_switches_reach_the_profiler(tmp_path, train_step):
    def run(sub, **kw):
        cfg = ProfilingConfig(
            use_pytorch_profiler=True, profile_step_start=0, profile_step_end=1, output_dir=str(tmp_path / sub), **kw
        )
        return events(run_loop(ProfilingController(cfg, rank=0), train_step, range(1)).artifacts[0])

    def has_shapes(evs):
        return any("Input Dims" in (e.get("args") or {}) for e in evs)

    def has_stacks(evs):  # with_stack: Python function events (ph X, cat python_function)
        return any(e.get("cat") == "python_function" for e in evs)

    plain, shapes, stacks = (
        run("plain"),
        run("shapes", pytorch_profiler_collect_shapes=True),
        run("stacks", pytorch_profiler_collect_callstack=True),
    )
    assert not has_shapes(plain) and not has_stacks(plain)
    assert has_shapes(shapes) and not has_stacks(shapes)
    assert has_stacks(stacks) and not has_shapes(stacks)


STEP = re.compile(r"^ProfilerStep#(\d+)$")


def test_chakra_execution_trace_beside_the_kineto_trace_holds_the_window_only(tmp_path, train_step):
    cfg = ProfilingConfig(
        use_pytorch_profiler=True,
        pytorch_profiler_collect_chakra=True,
        profile_step_start=2,
        profile_step_end=4,
        output_dir=str(tmp_path),
    )
    ctl = run_loop(ProfilingController(cfg, rank=0), train_step, range(6))
    kinds = {parse(p).kind: p for p in ctl.artifacts}
    assert set(kinds) == {"torch_trace", "chakra_trace"}
    chakra = kinds["chakra_trace"]
    assert chakra.name == "rank0_steps2-3.chakra.json" and chakra.parent == kinds["torch_trace"].parent
    nodes = load(chakra)["nodes"]  # parses as complete JSON
    steps = {int(m.group(1)) for n in nodes if (m := STEP.match(n["name"]))}
    assert steps == {2, 3}
    assert any(n["name"].startswith("aten::") for n in nodes)
    assert sorted(p.name for p in chakra.parent.iterdir()) == [
        "rank0_steps2-3.chakra.json",
        "rank0_steps2-3.pt.trace.json.gz",
    ]


def test_chakra_without_the_pytorch_profiler_is_warned_about(tmp_path, train_step, caplog):
    cfg = ProfilingConfig(
        record_memory_history=True,
        pytorch_profiler_collect_chakra=True,
        profile_step_start=0,
        profile_step_end=1,
        output_dir=str(tmp_path),
    )
    run_loop(ProfilingController(cfg, rank=0), train_step, range(2))
    assert any("collect_chakra=True needs use_pytorch_profiler=True" in r.getMessage() for r in caplog.records)
    assert not list(tmp_path.rglob("*.chakra.json"))
