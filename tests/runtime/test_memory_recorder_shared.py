"""Two memory-history windows of one process share torch's one recorder (CPU, with a CUDA stand-in).

torch has one CUDA memory-history recorder per process. A configured window and an on-demand
window (``bridge-plugins trigger --memory``) can both be recording: the on-demand one is accepted,
and starts recording, while the configured one still runs. The first to end used to switch
recording off for both, so the later snapshot missed everything after that point. And every
window attached one more out-of-memory observer that torch never lets go.

There is no GPU in CI, so the three torch.cuda calls the backend makes are replaced by a tiny
stand-in (``CudaStandIn``) that keeps torch's semantics that matter here: one process-wide
recording switch, a snapshot that shows whether recording was on, observers that accumulate.
The real code path runs against the real allocator in tests/runtime/test_gpu.py
(``test_overlapping_memory_windows_share_the_recorder``).
"""

from __future__ import annotations

import logging
import pickle

import pytest
import torch

from bridge_plugins import ProfilingConfig
from bridge_plugins.runtime import memory_recorder
from bridge_plugins.runtime.artifacts import ArtifactWriter
from bridge_plugins.runtime.backend import BackendContext
from bridge_plugins.runtime.memory import MemoryHistoryBackend


class CudaStandIn:
    """Stand-in for torch's process-wide memory-history recorder (no GPU here)."""

    def __init__(self):
        self.recording = False
        self.events = 0
        self.observers = []

    def record(self, enabled="all", **kwargs):
        self.recording = enabled is not None

    def allocate(self):
        if self.recording:
            self.events += 1

    def snapshot(self):
        return {"segments": [], "device_traces": [[{"action": "alloc"}] * self.events], "recording": self.recording}


@pytest.fixture
def cuda(monkeypatch):
    stand_in = CudaStandIn()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda.memory, "_record_memory_history", stand_in.record)
    monkeypatch.setattr(torch.cuda.memory, "_snapshot", stand_in.snapshot)
    monkeypatch.setattr(torch._C, "_cuda_attach_out_of_memory_observer", stand_in.observers.append, raising=False)
    monkeypatch.setattr(memory_recorder, "RECORDER", memory_recorder.SharedRecorder())  # this process's stays clean
    return stand_in


def backend(tmp_path, trigger=None):
    cfg = ProfilingConfig(
        output_dir=str(tmp_path), record_memory_history=True, profile_step_start=2, profile_step_end=4
    )
    return MemoryHistoryBackend(BackendContext(cfg, 0, 1, tmp_path, ArtifactWriter(), trigger))


def events_in(path):
    return len(pickle.loads(path.read_bytes())["device_traces"][0])


def test_the_first_window_to_end_leaves_recording_on_for_the_other(tmp_path, cuda):
    configured, on_demand = backend(tmp_path), backend(tmp_path, trigger=1)
    configured.on_enter()
    cuda.allocate()
    on_demand.on_enter()  # accepted while the configured window still records
    cuda.allocate()
    configured.window_end(2, 3, sync=True)
    assert cuda.recording, "the on-demand window still records"
    cuda.allocate()  # after the configured window's end: must be in the on-demand snapshot
    on_demand.window_end(5, 6, sync=True)
    assert not cuda.recording, "the last window to end switches recording off"
    assert events_in(tmp_path / "memory_snapshot_0.pickle") == 2
    assert events_in(tmp_path / "memory_snapshot_0_trigger1.pickle") == 3


def test_one_out_of_memory_observer_per_process(tmp_path, cuda):
    for trigger in (None, 1, 2):
        b = backend(tmp_path, trigger)
        b.on_enter()
        b.window_end(2, 3, sync=True)
    assert len(cuda.observers) == 1


def test_an_out_of_memory_error_is_dumped_once_while_two_windows_record(tmp_path, cuda):
    configured, on_demand = backend(tmp_path), backend(tmp_path, trigger=1)
    configured.on_enter()
    on_demand.on_enter()
    (observer,) = cuda.observers
    observer(0, 1 << 50, 1 << 30, 0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory_snapshot_oom_rank0.pickle"]
    configured.abort()
    on_demand.abort()
    assert not cuda.recording


def test_each_snapshot_says_what_it_is_and_memory_viz_can_read_it(tmp_path, cuda, caplog):
    caplog.set_level(logging.INFO, logger="bridge_plugins")
    b = backend(tmp_path, trigger=2)
    b.on_enter()
    assert f"rank 0: memory snapshots go to {tmp_path / 'memory_snapshot_0_trigger2.pickle'}" in caplog.messages
    (observer,) = cuda.observers
    observer(0, 1 << 50, 1 << 30, 0)
    b.window_end(2, 3, sync=True)
    assert b.recording is False and not cuda.recording
    wrote = [m.split(" (")[0] for m in caplog.messages if m.startswith("wrote ")]
    assert wrote == [
        f"wrote OOM memory snapshot {tmp_path / 'memory_snapshot_oom_rank0.pickle'}",
        f"wrote memory snapshot {tmp_path / 'memory_snapshot_0_trigger2.pickle'}",
    ]
    for path in tmp_path.iterdir():  # protocol 4, which memory_viz reads
        assert path.read_bytes()[:2] == b"\x80\x04"


def test_recording_starts_capped_at_the_configured_entries_and_a_new_backend_records_nothing_yet(
    tmp_path, cuda, monkeypatch
):
    calls = []
    monkeypatch.setattr(torch.cuda.memory, "_record_memory_history", lambda **kw: calls.append(kw))
    cfg = ProfilingConfig(output_dir=str(tmp_path), record_memory_history=True, memory_history_max_entries=1234)
    b = MemoryHistoryBackend(BackendContext(cfg, 0, 1, tmp_path, ArtifactWriter()))
    assert b.recording is False
    b.on_enter()
    assert calls == [dict(enabled="all", context="all", stacks="python", max_entries=1234)]


def test_a_failed_oom_dump_is_one_error_line_and_recording_goes_on(tmp_path, cuda, monkeypatch, caplog):
    def snapshot_fails():
        raise RuntimeError("CUDA error: out of memory")

    cfg = ProfilingConfig(output_dir=str(tmp_path), record_memory_history=True)
    b = MemoryHistoryBackend(BackendContext(cfg, 3, 4, tmp_path, ArtifactWriter()))
    b.on_enter()
    monkeypatch.setattr(torch.cuda.memory, "_snapshot", snapshot_fails)
    (observer,) = cuda.observers
    observer(0, 1 << 50, 1 << 30, 0)  # returns: the OOM itself reaches the training loop, not our failure
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR] == [
        "rank 3: writing the OOM memory snapshot failed: CUDA error: out of memory"
    ]
    assert b.recording is True and cuda.recording and list(tmp_path.iterdir()) == []


def test_on_a_restarted_attempt_the_line_names_the_snapshot_written(tmp_path, cuda, monkeypatch, caplog):
    """The restart tag is in the announced name as in the written one (a requeued job must not be
    pointed at the first attempt's file)."""
    caplog.set_level(logging.INFO, logger="bridge_plugins")
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "1")
    monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)
    b = backend(tmp_path)
    b.on_enter()
    b.window_end(2, 3, sync=True)
    (announced,) = [m for m in caplog.messages if "memory snapshots go to" in m]
    assert announced == f"rank 0: memory snapshots go to {tmp_path / 'memory_snapshot_0_restart1.pickle'}"
    assert [p.name for p in tmp_path.iterdir()] == ["memory_snapshot_0_restart1.pickle"]
