"""The on-demand poller on its real thread, without a controller: what it ignores at start, what it
queues and wakes the training thread for, the samples rank 0 publishes, and what it says. Every
wait is on the poller's own wake-up (an Event), bounded."""

from __future__ import annotations

import logging

import pytest

from bridge_plugins import ProfilingConfig
from bridge_plugins.jobdir.on_demand import POLL_ENV, Request, publish_request, read_progress, requests_dir
from bridge_plugins.runtime.on_demand import RequestPoller, log_accepted
from tests.runtime.poller_support import Woken, take_when_woken


@pytest.mark.parametrize("rank", [0, 1])
def test_requests_after_start_are_queued_in_id_order_and_earlier_ones_ignored(tmp_path, monkeypatch, caplog, rank):
    caplog.set_level(logging.INFO, logger="bridge_plugins")
    monkeypatch.setenv(POLL_ENV, "0.02")
    publish_request(tmp_path, 5, 7, [], False)  # an earlier job's
    woken = Woken()
    poller = RequestPoller(ProfilingConfig(on_demand=True), rank, 2, tmp_path, woken.lock, woken.wake)
    assert poller.interval == 0.02 and not poller.wants_step()
    poller.start()
    try:
        (requests_dir(tmp_path) / "bad.json").write_text("{")
        with woken.lock:  # both land in one poll: queued oldest id first
            first = publish_request(tmp_path, 10, 12, [1], True)
            second = publish_request(tmp_path, 20, 21, [], False)
        taken = take_when_woken(poller, woken, 3, 2)
        assert [r.id for r in taken] == [first.id, second.id] == [2, 3]
        assert (taken[0].start, taken[0].end, taken[0].ranks, taken[0].memory) == (10, 12, (1,), True)
        assert poller.take(4) == [] and not poller.wants_step()
    finally:
        poller.stop()
    info = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    if rank == 0:
        assert info == [
            "on-demand: 1 request file(s) from before this job started are ignored",
            f"on-demand profiling on: `bridge-plugins trigger {tmp_path} --steps N` profiles the next N steps "
            "(polled every 0.02 s)",
        ]
        progress = read_progress(tmp_path)
        assert (progress.state, progress.world_size, progress.poll_interval_s, progress.window) == (
            "finished",
            2,
            0.02,
            None,
        )
        assert progress.step in (3, 4)  # the samples were taken at the steps the test passed
    else:
        assert info == []
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and warnings[0].startswith(f"rank {rank}: on-demand request ignored: ")


def test_rank_0_asks_for_a_step_sample_and_takes_it(tmp_path, monkeypatch):
    monkeypatch.setenv(POLL_ENV, "0.02")
    woken = Woken()
    poller = RequestPoller(ProfilingConfig(on_demand=True), 0, 1, tmp_path, woken.lock, woken.wake).start()
    try:
        assert woken.event.wait(10)
        with woken.lock:
            assert poller.wants_step()
        assert poller.take(7) == []  # the sample: step 7, now
        for _ in range(500):  # the next poll publishes it
            assert woken.event.wait(10)
            woken.event.clear()
            if read_progress(tmp_path).step == 7:
                break
        progress = read_progress(tmp_path)
        assert (progress.state, progress.step, progress.steps_per_s) == ("running", 7, None)
    finally:
        poller.stop()
    assert read_progress(tmp_path).state == "finished"


def test_a_submitted_request_wakes_the_training_thread(tmp_path):
    woken = Woken()
    poller = RequestPoller(ProfilingConfig(on_demand=True), 1, 2, tmp_path, woken.lock, woken.wake)
    request = Request(id=4, start=9, end=10)
    poller.submit(request)
    assert woken.event.is_set() and poller.wants_step()
    assert poller.take(1) == [request] and not poller.wants_step()


def test_an_unusable_directory_is_said_once_and_the_poller_still_stops(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv(POLL_ENV, "0.02")
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "out"
    woken = Woken()
    poller = RequestPoller(ProfilingConfig(on_demand=True), 1, 2, out, woken.lock, woken.wake).start()
    assert not poller._stop.wait(0.2)  # ten polls, each failing
    poller.stop()
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert errors[0].startswith(f"rank 1: on-demand directory {requests_dir(out)} unusable ([Errno 20] Not a directory")
    assert [e for e in errors if "on-demand polling failed" in e] == [errors[1]]
    assert errors[1].startswith("rank 1: on-demand polling failed (NotADirectoryError: ") and errors[1].endswith(
        "; training continues"
    )
    assert len(errors) == 2


def test_an_accepted_request_is_one_info_line(caplog):
    caplog.set_level(logging.INFO, logger="bridge_plugins")
    request = Request(id=3, start=10, end=13)
    log_accepted(2, request, ProfilingConfig(use_pytorch_profiler=True, record_memory_history=True))
    log_accepted(2, request, ProfilingConfig(use_pytorch_profiler=True))
    assert [r.getMessage() for r in caplog.records] == [
        "rank 2: on-demand request 3 (steps 10-12) accepted with a memory snapshot",
        "rank 2: on-demand request 3 (steps 10-12) accepted",
    ]
