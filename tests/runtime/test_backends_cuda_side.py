"""The backends' CUDA side on this CPU-only machine: torch's CUDA calls, the NVTX emitter and the
profiler object are stood in by recorders (``Calls``), so the backends' real code paths run and every
call they make, with its arguments and in order, is checked. The real ones run on a GPU in
tests/runtime/test_gpu.py."""

from __future__ import annotations

import contextlib
import gzip
import json
import logging

import pytest
import torch
from torch.profiler import ProfilerActivity

from bridge_plugins import ProfilingConfig
from bridge_plugins.runtime import nsys as nsys_module
from bridge_plugins.runtime import torch_profiler
from bridge_plugins.runtime.artifacts import ArtifactError, ArtifactWriter
from bridge_plugins.runtime.backend import BackendContext
from bridge_plugins.runtime.nsys import NsysBackend
from bridge_plugins.runtime.nvtx_ranges import NvtxRanges
from bridge_plugins.runtime.torch_profiler import TorchProfilerBackend, export_gzip_trace


class Calls(list):
    """Every stood-in call, in order, as (name, arguments...)."""

    def recorder(self, name: str):
        return lambda *args, **kwargs: self.append((name, *args, *sorted(kwargs.items())))


@pytest.fixture
def cuda(monkeypatch) -> Calls:
    """A machine with a GPU, as far as the backends ask torch."""
    calls = Calls()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", calls.recorder("synchronize"))
    monkeypatch.setattr(torch.cuda.profiler, "start", calls.recorder("cudaProfilerStart"))
    monkeypatch.setattr(torch.cuda.profiler, "stop", calls.recorder("cudaProfilerStop"))
    monkeypatch.setattr(
        nsys_module, "find_nvtx", lambda: NvtxRanges("stand-in", calls.recorder("push"), calls.recorder("pop"))
    )

    @contextlib.contextmanager
    def emit_nvtx(**kwargs):
        calls.append(("emit_nvtx", *sorted(kwargs.items())))
        yield
        calls.append(("emit_nvtx ends",))

    monkeypatch.setattr(torch.autograd.profiler, "emit_nvtx", emit_nvtx)
    return calls


def context(tmp_path, rank=0, trigger=None, **cfg) -> BackendContext:
    config = ProfilingConfig(output_dir=str(tmp_path), profile_step_start=4, profile_step_end=6, **cfg)
    return BackendContext(config, rank, 2, tmp_path, ArtifactWriter(), trigger)


@pytest.mark.parametrize("record_shapes", [True, False])
def test_nsys_with_a_gpu_opens_the_capture_around_the_window_and_names_each_step(tmp_path, cuda, caplog, record_shapes):
    caplog.set_level(logging.INFO, logger="bridge_plugins")
    nsys = NsysBackend(context(tmp_path, rank=1, use_nsys_profiler=True, nvtx_per_op=True, record_shapes=record_shapes))
    assert (nsys.cuda, nsys.nvtx, nsys.per_op, nsys.capture_started, nsys.window_range_open) == (
        True,
        True,
        True,
        False,
        False,
    )
    nsys.on_enter()
    assert caplog.messages == []  # nothing to warn about with a GPU
    nsys.window_begin(4)
    assert cuda == [
        ("push", "bridge_plugins.window"),
        ("synchronize",),
        ("cudaProfilerStart",),
        ("emit_nvtx", ("record_shapes", record_shapes)),
    ]
    assert (nsys.capture_started, nsys.window_range_open) == (True, True)
    cuda.clear()
    for step in (4, 5):
        nsys.step_begin(step, step == 4)
        nsys.step_end(step)
    nsys.window_end(4, 5, sync=False)
    assert cuda == [
        ("push", "ProfilerStep#4"),
        ("pop",),
        ("push", "ProfilerStep#5"),
        ("pop",),
        ("emit_nvtx ends",),
        ("synchronize",),
        ("cudaProfilerStop",),
        ("pop",),
    ]
    assert (nsys.capture_started, nsys.window_range_open, nsys.ranges_emitted) == (False, False, 2)
    assert caplog.messages == ["rank 1: nsys capture range closed after steps 4-5 (2 NVTX step ranges)"]
    cuda.clear()
    nsys.abort()  # after the window: nothing is open, nothing is stopped twice
    assert cuda == []


def test_an_aborted_nsys_window_stops_the_capture_once_and_pops_its_range(tmp_path, cuda):
    nsys = NsysBackend(context(tmp_path, use_nsys_profiler=True))
    nsys.window_begin(4)
    nsys.step_begin(4, True)
    cuda.clear()
    nsys.abort()
    assert cuda == [("cudaProfilerStop",), ("pop",)]
    assert (nsys.capture_started, nsys.window_range_open) == (False, False)
    nsys.abort()
    nsys.window_end(4, 4, sync=True)
    assert cuda == [("cudaProfilerStop",), ("pop",)]


class Profile:
    """Stands in for torch.profiler.profile: records how it was made and used; exports a complete
    Kineto trace of the steps it was told."""

    made: list[Profile] = []

    def __init__(self, calls: Calls, **kwargs) -> None:
        self.calls, self.kwargs, self.step_num = calls, kwargs, 0
        self.steps: list[int] = []
        Profile.made.append(self)

    def start(self) -> None:
        self.calls.append(("start", self.step_num))
        self.steps.append(self.step_num)

    def step(self) -> None:
        self.step_num += 1
        self.steps.append(self.step_num)

    def stop(self) -> None:
        self.calls.append(("stop",))

    def add_metadata_json(self, key: str, value: str) -> None:
        self.calls.append(("metadata", key))

    def export_chrome_trace(self, path: str) -> None:
        self.calls.append(("export_chrome_trace", path))
        events = [{"ph": "X", "name": f"ProfilerStep#{n}"} for n in self.steps]
        with open(path, "w") as f:
            f.write('{\n "schemaVersion": 1,\n "traceEvents": ' + json.dumps(events) + ',\n "traceName": "t"\n}\n')


@pytest.fixture
def profile(monkeypatch, cuda) -> list[Profile]:
    monkeypatch.setattr(torch.profiler, "profile", lambda **kwargs: Profile(cuda, **kwargs))
    monkeypatch.setattr(Profile, "made", [])
    return Profile.made


@pytest.mark.parametrize(
    "switches, expected",
    [
        ({}, (False, False, False)),
        ({"record_shapes": True}, (True, False, False)),
        ({"pytorch_profiler_collect_shapes": True}, (True, False, False)),
        ({"pytorch_profiler_with_stack": True}, (False, True, False)),
        ({"pytorch_profiler_collect_callstack": True}, (False, True, False)),
        ({"pytorch_profiler_profile_memory": True}, (False, False, True)),
    ],
)
def test_with_a_gpu_the_profiler_records_cpu_and_cuda_with_the_configured_switches(
    tmp_path, profile, switches, expected
):
    backend = TorchProfilerBackend(context(tmp_path, use_pytorch_profiler=True, **switches))
    backend.window_begin(4)
    (prof,) = profile
    record_shapes, with_stack, profile_memory = expected
    assert prof.kwargs == {
        "activities": [ProfilerActivity.CPU, ProfilerActivity.CUDA],
        "schedule": torch_profiler._always_record,
        "record_shapes": record_shapes,
        "with_stack": with_stack,
        "profile_memory": profile_memory,
    }
    assert backend.prof is prof and prof.calls == [("start", 4), ("metadata", "distributedInfo")]


def test_with_a_gpu_the_window_ends_on_the_gpu_before_the_profiler_stops(tmp_path, profile):
    backend = TorchProfilerBackend(context(tmp_path, rank=1, trigger=2, use_pytorch_profiler=True))
    backend.window_end(4, 5, sync=True)  # no window open: nothing happens
    assert (profile, backend.ctx.writer.paths) == ([], [])
    backend.window_begin(4)
    backend.step_begin(4, True)
    backend.step_begin(5, False)
    backend.window_end(4, 5, sync=True)
    (prof,) = profile
    trace_dir = tmp_path / "torch_profile"
    (staged_json,) = [c[1] for c in prof.calls if c[0] == "export_chrome_trace"]
    assert prof.calls == [
        ("start", 4),
        ("metadata", "distributedInfo"),
        ("synchronize",),
        ("metadata", "bridge_plugins"),
        ("stop",),
        ("export_chrome_trace", staged_json),
    ]
    assert staged_json.startswith(f"{trace_dir}/.rank1_steps4-5_trigger2.") and staged_json.endswith(
        "/.partial.pt.trace.json"
    )
    (path,) = backend.ctx.writer.paths
    assert path == trace_dir / "rank1_steps4-5_trigger2.pt.trace.json.gz"
    with gzip.open(path, "rt") as f:
        assert [e["name"] for e in json.load(f)["traceEvents"]] == ["ProfilerStep#4", "ProfilerStep#5"]


def test_a_step_while_a_users_session_holds_the_profiler_does_nothing(tmp_path):
    backend = TorchProfilerBackend(context(tmp_path, use_pytorch_profiler=True))
    with torch.profiler.profile(activities=[ProfilerActivity.CPU]):
        backend.window_begin(4)
        backend.step_begin(4, True)
        backend.step_begin(5, False)
        backend.window_end(4, 5, sync=True)
    assert (backend.prof, backend.ctx.writer.paths) == (None, [])


def test_the_chrome_trace_is_staged_beside_the_gzip_and_removed(tmp_path, profile):
    export_gzip_trace(Profile(Calls()), str(tmp_path / "t.json.gz"))
    (prof,) = profile
    assert prof.calls == [("export_chrome_trace", str(tmp_path / "t.json"))]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json.gz"]


def test_a_truncated_gzip_is_not_published(tmp_path, monkeypatch, profile):
    """The gzip is read back before publishing: a producer that left a cut-off stream is refused."""

    def cut_short(prof, path):
        whole = gzip.compress(b'{"traceEvents": []}' * 100)
        with open(path, "wb") as f:
            f.write(whole[: len(whole) // 2])

    monkeypatch.setattr(torch_profiler, "export_gzip_trace", cut_short)
    backend = TorchProfilerBackend(context(tmp_path, rank=1, use_pytorch_profiler=True))
    backend.window_begin(4)
    with pytest.raises(ArtifactError) as raised:
        backend.window_end(4, 4, sync=True)
    final = tmp_path / "torch_profile" / "rank1_steps4-4.pt.trace.json.gz"
    assert str(raised.value).startswith(f"PyTorch trace {final} was not written: ")
    assert list((tmp_path / "torch_profile").iterdir()) == [] and backend.ctx.writer.paths == []


def test_a_failed_background_export_is_one_error_line(tmp_path, monkeypatch, profile, caplog):
    def fails(prof, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch_profiler, "export_gzip_trace", fails)
    backend = TorchProfilerBackend(context(tmp_path, rank=1, use_pytorch_profiler=True, background_export=True))
    backend.window_begin(4)
    backend.window_end(4, 4, sync=False)
    backend.on_exit()  # joins the export
    final = tmp_path / "torch_profile" / "rank1_steps4-4.pt.trace.json.gz"
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR] == [
        f"rank 1: PyTorch trace {final} was not written: OSError: [Errno 28] No space left on device; "
        "training continues"
    ]
