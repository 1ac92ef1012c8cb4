"""The backends driven one call at a time, as a window drives them (runtime/backend.py's call order):
which are built, how a failing one is dropped, and what the nsys, memory-history and PyTorch
profiler backends do and say on this CPU-only machine."""

from __future__ import annotations

import gzip
import json
import logging
import os
import sys

import pytest
import torch

from bridge_plugins import ProfilingConfig
from bridge_plugins.runtime import memory_recorder, registry
from bridge_plugins.runtime.artifacts import ArtifactWriter
from bridge_plugins.runtime.backend import Backend, BackendContext, call_each
from bridge_plugins.runtime.memory import MemoryHistoryBackend
from bridge_plugins.runtime.nsys import NsysBackend
from bridge_plugins.runtime.torch_profiler import (
    TorchProfilerBackend,
    export_gzip_trace,
    kineto_safe_path,
    profiler_already_running,
)
from tests.support import trace_steps

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only paths")


def context(tmp_path, rank=0, **cfg) -> BackendContext:
    config = ProfilingConfig(output_dir=str(tmp_path), profile_step_start=1, profile_step_end=3, **cfg)
    return BackendContext(config, rank, 2, tmp_path, ArtifactWriter())


def messages(caplog, level):
    return [r.getMessage() for r in caplog.records if r.levelno == level]


def test_the_enabled_backends_are_built_in_registry_order(tmp_path):
    ctx = context(tmp_path, use_pytorch_profiler=True, pytorch_profiler_collect_chakra=True, record_memory_history=True)
    assert [b.name for b in registry.build_backends(ctx)] == [
        "memory history",
        "chakra execution trace",
        "pytorch profiler",
    ]
    assert [b.name for b in registry.build_backends(context(tmp_path, use_nsys_profiler=True))] == ["nsys"]


def test_a_backend_that_cannot_be_loaded_or_built_is_off_and_the_others_run(tmp_path, monkeypatch, caplog):
    broken = registry.Entry(lambda c: True, "bridge_plugins.no_such_module:Gone")
    monkeypatch.setattr(registry, "BACKENDS", (broken, *registry.BACKENDS))
    ctx = context(tmp_path, rank=3, use_pytorch_profiler=True, record_memory_history=True)
    object.__setattr__(ctx.cfg, "memory_snapshot_path", ".")  # a directory: the backend refuses it
    assert [b.name for b in registry.build_backends(ctx)] == ["pytorch profiler"]
    assert messages(caplog, logging.ERROR) == [
        "rank 3: Gone is off for this run (ModuleNotFoundError: No module named 'bridge_plugins.no_such_module'); "
        "training continues",
        f"rank 3: memory history is off for this run (ProfilingConfig.memory_snapshot_path='.' names a directory "
        f"({tmp_path}); give a file inside it, e.g. 'memory_snapshot.pickle'); training continues",
    ]


def test_chakra_without_the_pytorch_profiler_is_one_warning_and_no_backend(tmp_path, caplog):
    assert registry.build_backends(context(tmp_path, rank=1, pytorch_profiler_collect_chakra=True)) == []
    assert messages(caplog, logging.WARNING) == [
        "rank 1: pytorch_profiler_collect_chakra=True needs use_pytorch_profiler=True (its steps are the PyTorch "
        "profiler's): no Chakra execution trace is written"
    ]


class Calls(Backend):
    """A backend that records its calls in ``log``, and raises where ``fails`` names it."""

    def __init__(self, ctx, name, log, fails=False):
        super().__init__(ctx)
        self.name, self.log, self.fails = name, log, fails

    def step_end(self, step):
        self.log.append((self.name, "step_end", step))
        if self.fails:
            raise RuntimeError("broken")

    def abort(self):
        self.log.append((self.name, "abort"))
        raise OSError("aborting fails too")


def test_a_backend_that_raises_is_logged_aborted_and_dropped(tmp_path, caplog):
    log = []
    ctx = context(tmp_path)
    a, b, c = Calls(ctx, "a", log), Calls(ctx, "b", log, fails=True), Calls(ctx, "c", log)
    backends = [a, b, c]
    call_each(backends, lambda x: x.step_end(4), "step_end", 5, reverse=True)
    assert log == [("c", "step_end", 4), ("b", "step_end", 4), ("b", "abort"), ("a", "step_end", 4)]
    assert backends == [a, c]
    assert messages(caplog, logging.ERROR) == [
        "rank 5: b failed in step_end (RuntimeError: broken); it is switched off and training continues"
    ]
    log.clear()
    call_each(backends, lambda x: x.step_end(6), "step_end", 5)
    assert log == [("a", "step_end", 6), ("c", "step_end", 6)]


def test_the_base_backend_does_nothing_at_every_call(tmp_path):
    b = Backend(context(tmp_path))
    assert b.name == "backend" and b.rank == 0 and b.cfg is b.ctx.cfg
    for result in (b.on_enter(), b.window_begin(1), b.step_begin(1, True), b.step_end(1), b.window_end(1, 2, False)):
        assert result is None
    assert (b.on_exit(), b.abort()) == (None, None)


def test_nsys_without_cuda_pushes_the_window_and_one_range_per_step(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="bridge_plugins")
    nsys = NsysBackend(context(tmp_path, rank=1, use_nsys_profiler=True))
    nsys.on_enter()
    assert messages(caplog, logging.WARNING) == [
        "rank 1: nsys profiling but CUDA is not available: cudaProfilerStart/Stop are skipped; nsys captures the "
        "window's NVTX range 'bridge_plugins.window' (the launch wrapper's CPU capture range) with one NVTX range "
        "per step (from nvtx); training continues"
    ]
    nsys.window_begin(1)
    assert nsys.window_range_open and not nsys.capture_started and not nsys.per_op
    for step in (1, 2):
        nsys.step_begin(step, step == 1)
        nsys.step_end(step)
    nsys.window_end(1, 2, False)
    assert nsys.ranges_emitted == 2 and not nsys.window_range_open
    assert messages(caplog, logging.INFO) == ["rank 1: nsys capture range closed after steps 1-2 (2 NVTX step ranges)"]
    nsys.abort()  # nothing left open: nothing more is popped
    assert not nsys.window_range_open


def test_nsys_without_any_nvtx_says_it_records_nothing(tmp_path, monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "nvtx", None)
    nsys = NsysBackend(context(tmp_path, use_nsys_profiler=True, nvtx_per_op=True))
    nsys.on_enter()
    (line,) = messages(caplog, logging.WARNING)
    assert line.endswith(
        "cudaProfilerStart/Stop are skipped; there is no NVTX here either (pip install nvtx), so nsys will record "
        "nothing; training continues"
    )
    nsys.window_begin(1)
    nsys.step_begin(1, True)
    assert (nsys.window_range_open, nsys.ranges_emitted, nsys.per_op) == (False, 0, True)


def test_an_aborted_nsys_window_pops_its_range(tmp_path):
    nsys = NsysBackend(context(tmp_path, use_nsys_profiler=True))
    nsys.window_begin(1)
    nsys.abort()
    assert not nsys.window_range_open and not nsys.capture_started


def test_memory_history_without_cuda_warns_where_the_snapshot_would_go(tmp_path, caplog):
    memory = MemoryHistoryBackend(context(tmp_path, rank=1, record_memory_history=True))
    memory.on_enter()
    assert messages(caplog, logging.WARNING) == [
        "rank 1: record_memory_history requested but CUDA is not available: no memory snapshot will be written "
        f"(it would have gone to {tmp_path / 'memory_snapshot_1.pickle'}; memory history records the CUDA caching "
        "allocator); training continues"
    ]
    assert not memory.recording
    memory.window_end(1, 2, False)
    memory.on_exit()
    assert list(tmp_path.iterdir()) == []


def test_a_path_kineto_would_rewrite_goes_through_the_directory_descriptor(tmp_path):
    plain = str(tmp_path / "t.json")
    with kineto_safe_path(plain) as got:
        assert got == plain
    odd = tmp_path / "a\\b"
    odd.mkdir()
    with kineto_safe_path(str(odd / "t.json")) as got:
        fd = int(got.split("/")[4])
        assert got == f"/proc/self/fd/{fd}/t.json" and os.path.samefile(f"/proc/self/fd/{fd}", odd)
    with pytest.raises(OSError):
        os.fstat(fd)  # closed after
    with pytest.raises(ValueError) as raised, kineto_safe_path(str(tmp_path / "t\nx.json")):
        pass
    assert str(raised.value) == (
        "the path holds '\\n', which torch.profiler's writer rewrites (the trace would be lost)"
    )


def test_a_real_trace_is_exported_gzipped_into_a_directory_kineto_would_rename(tmp_path):
    odd = tmp_path / "x\\y"
    odd.mkdir()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        assert profiler_already_running()
        torch.ones(4).sum()
    assert not profiler_already_running()
    export_gzip_trace(prof, str(odd / "t.json.gz"))
    assert os.listdir(odd) == ["t.json.gz"]
    with gzip.open(odd / "t.json.gz", "rt") as f:
        assert "traceEvents" in json.load(f)


def test_the_pytorch_profiler_numbers_steps_globally_and_writes_on_close(tmp_path, caplog):
    prof = TorchProfilerBackend(context(tmp_path, use_pytorch_profiler=True, background_export=False))
    prof.window_begin(5)
    for step in (5, 7):  # a skipped step keeps the global number
        prof.step_begin(step, step == 5)
        torch.ones(8).sum()
    prof.window_end(5, 7, sync=False)
    (path,) = prof.ctx.writer.paths
    assert path == tmp_path / "torch_profile" / "rank0_steps5-7.pt.trace.json.gz"
    assert trace_steps(path) == {5, 7} and prof.prof is None and prof._thread is None
    prof.window_end(5, 7, sync=True)  # nothing open: nothing written
    assert prof.ctx.writer.paths == [path]


def test_an_aborted_pytorch_window_leaves_no_profiler_running(tmp_path):
    prof = TorchProfilerBackend(context(tmp_path, use_pytorch_profiler=True))
    prof.window_begin(1)
    assert profiler_already_running()
    prof.abort()
    assert not profiler_already_running() and prof.prof is None
    prof.abort()


def test_the_shared_recorder_asks_torch_for_python_stacks_capped_and_stops_after_the_last(monkeypatch):
    """torch's recording switch stood in by a list of its calls (no CUDA here); the real one runs in
    test_gpu.py."""
    calls, observers = [], []
    monkeypatch.setattr(torch.cuda.memory, "_record_memory_history", lambda **kw: calls.append(kw))
    monkeypatch.setattr(torch._C, "_cuda_attach_out_of_memory_observer", observers.append, raising=False)
    recorder = memory_recorder.SharedRecorder()
    first, second = [], []
    recorder.start(123, lambda: first.append("oom"))
    recorder.start(456, lambda: second.append("oom"))
    assert calls == [dict(enabled="all", context="all", stacks="python", max_entries=123)]
    assert observers == [recorder._on_oom]
    observers[0](0, 0, 0, 0)
    assert (first, second) == (["oom"], [])
    recorder.stop(recorder._users[0])
    assert len(calls) == 1
    recorder.stop(recorder._users[0])
    assert calls[1:] == [dict(enabled=None)] and recorder._users == []
    observers[0](0, 0, 0, 0)  # no window records: nobody is called
    assert (first, second) == (["oom"], [])


@pytest.mark.parametrize("on", [True, False])
def test_the_profiler_switches_reach_torch_profiler(tmp_path, on):
    ctx = context(
        tmp_path,
        use_pytorch_profiler=True,
        pytorch_profiler_collect_shapes=on,
        pytorch_profiler_collect_callstack=on,
        pytorch_profiler_profile_memory=on,
    )
    backend = TorchProfilerBackend(ctx)
    backend.window_begin(4)
    try:
        prof = backend.prof
        assert (prof.record_shapes, prof.with_stack, prof.profile_memory) == (on, on, on)
        assert prof.activities == {torch.profiler.ProfilerActivity.CPU} and prof.step_num == 4
    finally:
        backend.abort()


def test_a_users_profiler_session_is_left_alone_with_one_line(tmp_path, caplog):
    backend = TorchProfilerBackend(context(tmp_path, rank=1, use_pytorch_profiler=True))
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        backend.window_begin(4)
    assert backend.prof is None
    assert messages(caplog, logging.WARNING) == [
        "rank 1: a torch.profiler session opened outside bridge_plugins is running: it is left alone and this "
        "window (from step 4) writes no PyTorch trace; your session records these steps"
    ]


def test_a_session_of_the_legacy_autograd_profiler_counts_as_running():
    """It sets only torch's C-side flag (not ``torch.autograd.profiler._is_profiler_enabled``)."""
    from torch.autograd.profiler_legacy import profile

    with profile():
        assert (torch.autograd.profiler._is_profiler_enabled, profiler_already_running()) == (False, True)
    assert not profiler_already_running()
