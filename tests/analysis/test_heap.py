"""glibc's mmap threshold is 1 MiB while the analyses of a trace of ``MMAP_FROM_GPU_EVENTS`` or more
run (256 KiB for a big one), 32 MiB after, only in a process the analysis owns (the command line's);
a smaller trace's, and a user's process that calls ``summarize``, leave it as it was."""

from __future__ import annotations

import pytest

from bridge_plugins.analysis import chrome, heap
from bridge_plugins.cli import main
from tests.analysis.gpu_traces import FIXTURES

TRACE = FIXTURES / "job2_rank0.json.gz"


class Libc:
    """A stand-in for glibc: records each ``mallopt`` call (the real one would change this test process)."""

    def __init__(self, calls: list) -> None:
        self.calls = calls

    def mallopt(self, what: int, value: int) -> int:
        self.calls.append((what, value))
        return 1


@pytest.fixture
def calls(monkeypatch):
    seen: list = []
    real = chrome._analyzed

    def analyzed(d, path, timelines=True):
        seen.append("analyzed")
        return real(d, path, timelines)

    monkeypatch.setattr(heap, "libc", lambda: Libc(seen))
    monkeypatch.setattr(heap, "_owned", False)
    monkeypatch.setattr(chrome, "_analyzed", analyzed)
    return seen


def test_a_process_the_analysis_does_not_own_keeps_its_allocator(calls):
    chrome.summarize_trace(TRACE)
    assert calls == ["analyzed"]


def test_in_its_own_process_the_analyses_run_with_a_1_mib_threshold_and_leave_32_mib(calls, monkeypatch):
    heap.own_this_process()
    monkeypatch.setattr(heap, "MMAP_FROM_GPU_EVENTS", 3774)  # job2_rank0 keeps 3,774 GPU events
    chrome.summarize_trace(TRACE)
    assert calls == [(-3, 1 << 20), "analyzed", (-3, 32 << 20)]


def test_a_smaller_traces_analyses_keep_glibcs_own_threshold(calls, monkeypatch):
    """Below MMAP_FROM_GPU_EVENTS the heap's holes are small: reusing them saves page faults."""
    heap.own_this_process()
    monkeypatch.setattr(heap, "MMAP_FROM_GPU_EVENTS", 3775)
    chrome.summarize_trace(TRACE)
    assert calls == ["analyzed"]


def test_the_command_line_owns_its_process(calls, capsys, monkeypatch):
    monkeypatch.setattr(heap, "MMAP_FROM_GPU_EVENTS", 100)
    assert main(["summary", "--json", "--jobs", "1", str(TRACE)]) == 0
    assert calls == [(-3, 1 << 20), "analyzed", (-3, 32 << 20)]
    assert '"schema_version": 2' in capsys.readouterr().out


def test_without_mallopt_the_trace_reads_the_same(monkeypatch):
    monkeypatch.setattr(heap, "_owned", True)
    monkeypatch.setattr(heap, "libc", lambda: None)
    without = chrome.summarize_trace(TRACE)
    monkeypatch.setattr(heap, "_owned", False)
    assert without == chrome.summarize_trace(TRACE)


def test_a_big_traces_analyses_give_back_smaller_arrays_too(calls, monkeypatch):
    heap.own_this_process()
    monkeypatch.setattr(heap, "BIG_TRACE_GPU_EVENTS", 100)  # job2_rank0 keeps 3,774 GPU events
    monkeypatch.setattr(heap, "MMAP_FROM_GPU_EVENTS", 50)
    chrome.summarize_trace(TRACE)
    assert calls == [(-3, 1 << 18), "analyzed", (-3, 32 << 20)]
    calls.clear()
    with heap.big_arrays_given_back(99):
        pass
    with heap.big_arrays_given_back(49):
        pass
    assert calls == [(-3, 1 << 20), (-3, 32 << 20)]
