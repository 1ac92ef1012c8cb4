"""The Chakra backend driven call by call, with torch's ExecutionTraceObserver stood in by a recorder
(``Observer``) that writes its JSON as the real one does: a head when it starts, the rest when its
callback is unregistered. Where the staging directory is, what is published under which name, the
completeness check before publishing, and what an abort leaves. The real observer runs in
test_controller_traces.py (``test_chakra_execution_trace_beside_the_kineto_trace_holds_the_window_only``)."""

from __future__ import annotations

import json
import logging

import pytest

from bridge_plugins import ProfilingConfig
from bridge_plugins.runtime import chakra
from bridge_plugins.runtime.artifacts import ArtifactError, ArtifactWriter
from bridge_plugins.runtime.backend import BackendContext, call_each
from bridge_plugins.runtime.chakra import ChakraBackend

HEAD = '{"schema": "1.1.1-chakra.0.0.4", "pid": 1, "time": "now", "start_ts": 10, "nodes": [\n'
COMPLETE = '{"id": 1, "name": "ProfilerStep#2"}\n], "finish_ts": 20}\n'


class Observer:
    """Stands in for ExecutionTraceObserver: records its calls, writes ``HEAD`` at start and ``tail``
    when unregistered (``COMPLETE`` unless a test cuts it short)."""

    made: list[Observer] = []
    tail = COMPLETE

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        Observer.made.append(self)

    def register_callback(self, path: str) -> Observer:
        self.calls.append(("register_callback", path))
        self.path = path
        return self

    def start(self) -> None:
        self.calls.append(("start",))
        with open(self.path, "w") as f:
            f.write(HEAD)

    def stop(self) -> None:
        self.calls.append(("stop",))

    def unregister_callback(self) -> None:
        self.calls.append(("unregister_callback",))
        with open(self.path, "a") as f:
            f.write(self.tail)


@pytest.fixture
def observers(monkeypatch):
    monkeypatch.setattr(chakra, "ExecutionTraceObserver", Observer)
    monkeypatch.setattr(Observer, "made", [])
    return Observer.made


def backend(tmp_path, rank=1, trigger=None) -> ChakraBackend:
    cfg = ProfilingConfig(
        output_dir=str(tmp_path),
        use_pytorch_profiler=True,
        pytorch_profiler_collect_chakra=True,
        profile_step_start=2,
        profile_step_end=4,
    )
    return ChakraBackend(BackendContext(cfg, rank, 2, tmp_path, ArtifactWriter(), trigger))


def test_the_observer_records_into_a_private_staging_directory_then_the_trace_is_published(tmp_path, observers, caplog):
    caplog.set_level(logging.INFO, logger="bridge_plugins")
    b = backend(tmp_path, rank=1, trigger=3)
    trace_dir = tmp_path / "torch_profile"
    b.window_begin(2)
    (staging,) = trace_dir.iterdir()
    assert staging.name.startswith(".rank1_chakra.") and staging.name.endswith(".tmp")
    (observer,) = observers
    assert observer.calls == [("register_callback", str(staging / "execution_trace.json")), ("start",)]
    assert [p.name for p in staging.iterdir()] == ["execution_trace.json"]
    b.window_end(2, 3, sync=False)
    assert observer.calls[2:] == [("stop",), ("unregister_callback",)]
    published = trace_dir / "rank1_steps2-3_trigger3.chakra.json"
    assert list(trace_dir.iterdir()) == [published] and b.ctx.writer.paths == [published]
    assert json.loads(published.read_text()) == json.loads(HEAD + COMPLETE)
    (line,) = [m for m in caplog.messages if m.startswith("wrote ")]
    assert line.startswith(f"wrote Chakra execution trace {published} (")
    assert (b.observer, b.staging) == (None, None)


def test_a_trace_cut_short_is_not_published_and_the_failure_names_it(tmp_path, observers, monkeypatch, caplog):
    monkeypatch.setattr(Observer, "tail", '{"id": 1, "name": "ProfilerStep#2"}')  # no "], finish_ts": ...}"
    b = backend(tmp_path, rank=0)
    b.window_begin(2)
    with pytest.raises(ArtifactError) as raised:
        b.window_end(2, 3, sync=False)
    final = tmp_path / "torch_profile" / "rank0_steps2-3.chakra.json"
    size = len(HEAD) + len('{"id": 1, "name": "ProfilerStep#2"}')
    assert str(raised.value).startswith(
        f"Chakra execution trace {final} was not written: ValueError: the profiler wrote an incomplete file ({size} bytes, "
        "no closing footer): the cause is unknown"
    )
    assert list((tmp_path / "torch_profile").iterdir()) == [] and b.ctx.writer.paths == []


def test_a_window_that_cannot_stage_says_which_trace(tmp_path, observers):
    (tmp_path / "torch_profile").write_text("a file where the directory goes")
    b = backend(tmp_path, rank=1)
    with pytest.raises(ArtifactError) as raised:
        b.window_begin(2)
    staged = tmp_path / "torch_profile" / "rank1_chakra.chakra.json"
    assert str(raised.value).startswith(f"Chakra execution trace {staged} was not written: ")
    assert observers == []


def test_an_aborted_window_stops_the_observer_and_leaves_no_staging_directory(tmp_path, observers):
    b = backend(tmp_path)
    b.abort()  # nothing open: nothing to stop
    b.window_end(2, 3, sync=False)  # nor to write
    assert (observers, b.ctx.writer.paths) == ([], [])
    b.window_begin(2)
    b.abort()
    (observer,) = observers
    assert observer.calls[2:] == [("stop",), ("unregister_callback",)]
    assert list((tmp_path / "torch_profile").iterdir()) == []
    assert (b.observer, b.staging) == (None, None)
    b.abort()  # a second time: nothing left
    b.window_end(2, 3, sync=False)
    assert observer.calls[4:] == [] and b.ctx.writer.paths == []


def test_a_failing_chakra_window_is_dropped_and_its_staging_directory_removed(tmp_path, observers, caplog):
    b = backend(tmp_path, rank=1)
    backends = [b]
    call_each(backends, lambda x: x.window_begin(2), "window_begin", 1)

    def broken() -> None:
        raise RuntimeError("observer broke")

    observers[0].stop = broken
    call_each(backends, lambda x: x.window_end(2, 3, False), "window_end", 1)
    assert backends == [] and list((tmp_path / "torch_profile").iterdir()) == []
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR] == [
        "rank 1: chakra execution trace failed in window_end (RuntimeError: observer broke); it is switched off "
        "and training continues"
    ]
