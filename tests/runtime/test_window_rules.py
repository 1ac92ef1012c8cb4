"""The window rules through the real controller, fast: which steps a window captures and what it
says when it is missed, entered late or closed early (resume, skipped steps, a step back, an
exception, SIGTERM). The backend is the real memory-history one, which on a machine without CUDA
warns once and records nothing, so a case costs milliseconds; the traces themselves are checked
in test_controller.py and test_window_properties.py. Which backend calls a window makes, in which
order and with which steps, is seen through ``Recorder`` (window_support.py). Mutation testing (scripts/mutation.sh window)
runs these for every mutant."""

from __future__ import annotations

import logging
import os
import signal

import pytest

from bridge_plugins import ProfilingConfig, ProfilingController
from bridge_plugins.runtime.steps import NOOP
from tests.runtime.window_support import CALLS, Recorder, calls_of, run

pytestmark = pytest.mark.skipif(
    __import__("torch").cuda.is_available(), reason="the memory backend records on CUDA: not the no-op these need"
)


def test_a_full_window_captures_exactly_its_steps_and_closes_on_time(tmp_path, caplog):
    ctl, lines, scoped = run(tmp_path, caplog, range(10), 3, 6)
    assert ctl.selected is True and ctl.captured_steps == range(3, 6)
    assert scoped == [3, 4, 5]  # every other step gets the shared no-op: the fast path
    assert lines == [
        f"rank 0: profiling steps 3-5 with memory history; artifacts under {tmp_path}",
        "rank 0: profiling window closed: captured steps 3-5",
    ]


def test_a_one_step_window(tmp_path, caplog):
    ctl, lines, scoped = run(tmp_path, caplog, range(5), 0, 1)
    assert ctl.captured_steps == range(0, 1) and scoped == [0]
    assert lines[-1] == "rank 0: profiling window closed: captured steps 0-0"


def test_the_loop_ending_inside_the_window_closes_it_with_what_was_captured(tmp_path, caplog):
    ctl, lines, _ = run(tmp_path, caplog, range(5), 3, 7)
    assert ctl.captured_steps == range(3, 5)
    assert lines[-1] == (
        "rank 0: profiling window steps 3-6 closed early (the training loop ended after step 4): captured steps 3-4"
    )


def test_a_run_resumed_inside_the_window_captures_the_rest(tmp_path, caplog):
    ctl, lines, scoped = run(tmp_path, caplog, range(4, 10), 3, 6)
    assert ctl.captured_steps == range(4, 6) and scoped == [4, 5]
    assert lines[1:] == [
        "rank 0: the run starts at step 4, inside the profiling window (steps 3-5): capturing steps 4-5",
        "rank 0: profiling window closed: captured steps 4-5",
    ]


def test_a_run_resumed_at_the_window_start_is_not_late(tmp_path, caplog):
    ctl, lines, _ = run(tmp_path, caplog, range(3, 10), 3, 6)
    assert ctl.captured_steps == range(3, 6) and len(lines) == 2 and "inside" not in lines[1]


def test_a_run_resumed_past_the_window_captures_nothing(tmp_path, caplog):
    ctl, lines, scoped = run(tmp_path, caplog, range(6, 9), 3, 6)
    assert ctl.captured_steps is None and scoped == []
    assert lines[1:] == [
        "rank 0: step 6 is past the profiling window (steps 3-5) that was never opened (a resume past it, or "
        "skipped steps): the profilers capture nothing; memory history, if on, is snapshotted now and stops"
    ]


def test_a_window_never_reached(tmp_path, caplog):
    ctl, lines, _ = run(tmp_path, caplog, range(3), 5, 7)
    assert ctl.captured_steps is None
    assert lines[1:] == [
        "rank 0: the profiling window (steps 5-6) was never reached: the training loop ended before step 5; "
        "nothing was captured by the profilers"
    ]


def test_an_exception_before_the_window_is_named(tmp_path, caplog):
    ctl, lines, _ = run(tmp_path, caplog, range(10), 5, 7, fail_at=2)
    assert ctl.captured_steps is None
    assert lines[-1].endswith(
        "was never reached: ValueError raised before step 5; nothing was captured by the profilers"
    )


def test_skipping_past_the_end_closes_the_window_early(tmp_path, caplog):
    ctl, lines, scoped = run(tmp_path, caplog, range(0, 12, 3), 2, 6)
    assert ctl.captured_steps == range(3, 4) and scoped == [3]
    assert lines[1:] == [
        "rank 0: the run starts at step 3, inside the profiling window (steps 2-5): capturing steps 3-5",
        "rank 0: profiling window steps 2-5 closed early (step 6 came after step 3, skipping past the window "
        "end): captured steps 3-3",
    ]


def test_a_step_back_closes_the_window(tmp_path, caplog):
    ctl, lines, scoped = run(tmp_path, caplog, [3, 4, 4, 5], 3, 6)
    assert ctl.captured_steps == range(3, 5) and scoped == [3, 4]
    assert lines[-1] == (
        "rank 0: profiling window steps 3-5 closed early (step 4 came after step 4, going back (a file's steps "
        "must match its name)): captured steps 3-4"
    )


def test_a_step_back_to_step_0_closes_the_window(tmp_path, caplog):
    ctl, lines, scoped = run(tmp_path, caplog, [0, 1, 0, 1], 0, 3)
    assert ctl.captured_steps == range(0, 2) and scoped == [0, 1]
    assert lines[-1] == (
        "rank 0: profiling window steps 0-2 closed early (step 0 came after step 1, going back (a file's steps "
        "must match its name)): captured steps 0-1"
    )


def test_a_step_back_to_step_0_right_after_the_first_step_closes_the_window(tmp_path, caplog):
    ctl, lines, scoped = run(tmp_path, caplog, [2, 0, 1], 2, 5)
    assert ctl.captured_steps == range(2, 3) and scoped == [2]
    assert lines[-1] == (
        "rank 0: profiling window steps 2-4 closed early (step 0 came after step 2, going back (a file's steps "
        "must match its name)): captured steps 2-2"
    )


def test_an_exception_inside_the_window_closes_it_at_that_step(tmp_path, caplog):
    ctl, lines, _ = run(tmp_path, caplog, range(10), 2, 6, fail_at=3)
    assert ctl.captured_steps == range(2, 4)
    assert (
        lines[-1] == "rank 0: profiling window steps 2-5 closed early (ValueError raised in step 3): captured steps 2-3"
    )


def test_an_unselected_rank_does_nothing(tmp_path, caplog):
    ctl, lines, scoped = run(tmp_path, caplog, range(10), 3, 6, rank=1, ranks=[0, 2])
    assert ctl.selected is False and ctl.captured_steps is None and scoped == [] and lines == []
    ctl, lines, scoped = run(tmp_path, caplog, range(10), 3, 6, rank=2, ranks=[0, 2])
    assert ctl.selected is True and scoped == [3, 4, 5]


def test_ranks_outside_the_world_are_named_by_rank_0(tmp_path, caplog):
    _, lines, _ = run(tmp_path, caplog, range(2), 3, 6, ranks=[0, 3, 4, 5])  # world 4: ranks 0..3
    assert lines[0] == (
        "profile_ranks=[0, 3, 4, 5] lists rank(s) [4, 5] outside the world of 4 rank(s) (0..3): they will not profile"
    )


def test_sigterm_inside_the_window_closes_it_then_reaches_the_previous_handler(tmp_path, caplog):
    """In-process: the test's own SIGTERM handler is the one the controller hands the signal to."""
    received = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: received.append(signum))
    try:

        def sigterm_at_4(i):
            if i == 4:
                os.kill(os.getpid(), signal.SIGTERM)

        ctl, lines, scoped = run(tmp_path, caplog, range(10), 3, 7, on_step=sigterm_at_4)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert received == [signal.SIGTERM]
    assert ctl.captured_steps == range(3, 5) and scoped == [3, 4]  # no step after it is profiled
    assert lines[-1] == (
        "rank 0: profiling window steps 3-6 closed early (SIGTERM received during step 4): captured steps 3-4"
    )


def test_no_config_or_nothing_on_is_inert(tmp_path):
    for cfg in (None, ProfilingConfig(output_dir=str(tmp_path))):
        with ProfilingController(cfg, rank=0) as ctl:
            assert ctl.step(0) is NOOP and ctl.selected is False and ctl.captured_steps is None
            assert (ctl.rank, ctl.world_size, ctl.output_dir, ctl.artifacts) == (None, None, None, [])


# ----------------------------------------------------------------------------- the backend calls
def test_backends_open_in_order_close_in_reverse_with_the_window_steps(tmp_path, caplog, recorders):
    ctl, lines, _ = run(tmp_path, caplog, range(10), 3, 5)
    assert "with memory history, recorder, second;" in lines[0]
    assert calls_of("recorder") == [
        ("init", 0, 4, tmp_path, None, tmp_path),
        ("on_enter",),
        ("window_begin", 3),
        ("step_begin", 3, True),
        ("step_end", 3),
        ("step_begin", 4, False),
        ("step_end", 4),
        ("window_end", 3, 4, False),
        ("on_exit",),
    ]
    order = [(c[0], c[1]) for c in CALLS if c[1] in ("on_enter", "window_begin", "step_end", "window_end", "on_exit")]
    assert order == [
        ("recorder", "on_enter"),
        ("second", "on_enter"),
        ("recorder", "window_begin"),
        ("second", "window_begin"),
        ("second", "step_end"),  # closing calls run in reverse (LIFO)
        ("recorder", "step_end"),
        ("second", "step_end"),
        ("recorder", "step_end"),
        ("second", "window_end"),
        ("recorder", "window_end"),
        ("recorder", "on_exit"),
        ("second", "on_exit"),
    ]


def test_sigterm_makes_the_backends_write_synchronously(tmp_path, caplog, recorders):
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: None)
    try:
        run(tmp_path, caplog, range(10), 3, 7, on_step=lambda i: i == 4 and os.kill(os.getpid(), signal.SIGTERM))
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert ("window_end", 3, 4, True) in calls_of("recorder") and calls_of("recorder")[-1] == ("on_exit",)
    assert ("step_end", 4) not in calls_of("recorder")  # closed from inside the step


def test_an_unreached_window_still_finishes_its_backends(tmp_path, caplog, recorders):
    run(tmp_path, caplog, range(2), 5, 7)
    assert [c[0] for c in calls_of("recorder")] == ["init", "on_enter", "on_exit"]


@pytest.mark.parametrize("method", ["on_enter", "window_begin", "step_begin", "step_end", "window_end", "on_exit"])
def test_a_failing_backend_is_named_switched_off_and_the_others_go_on(tmp_path, caplog, recorders, method):
    Recorder.fail_in = method
    ctl, lines, _ = run(tmp_path, caplog, range(10), 3, 6)
    said = [line for line in lines if "failed in" in line]
    assert said == [
        f"rank 0: recorder failed in {method} (RuntimeError: planted); it is switched off and training continues"
    ]
    mine = calls_of("recorder")
    assert mine[-1] == ("abort",) and [c[0] for c in mine].count(method) == 1  # never called again
    assert calls_of("second")[-2:] == [("window_end", 3, 5, False), ("on_exit",)]
    assert ctl.captured_steps == range(3, 6)


def test_from_config_passes_its_arguments_on(tmp_path, caplog):
    cfg = ProfilingConfig(
        record_memory_history=True,
        profile_step_start=1,
        profile_step_end=2,
        profile_ranks=[3],
        output_dir=str(tmp_path),
    )
    with ProfilingController.from_config(cfg, rank=3, world_size=4) as ctl:
        assert (ctl.rank, ctl.world_size, ctl.selected, ctl.config) == (3, 4, True, cfg)
    with ProfilingController.from_config(None) as ctl:
        assert ctl.config is None and ctl.step(0) is NOOP


def test_an_on_demand_request_opens_a_window_at_its_first_step(tmp_path, caplog, monkeypatch):
    """The controller's on-demand path: the poller queues the request, the next step accepts it
    (waited for in the log: an event, not a sleep), and the window opens at exactly its start."""
    import time

    from bridge_plugins.jobdir.on_demand import POLL_ENV, publish_request, read_progress
    from tests.on_demand_support import on_demand_traces

    monkeypatch.setenv(POLL_ENV, "0.01")
    caplog.set_level(logging.INFO, logger="bridge_plugins")
    accepted = "rank 0: on-demand request 1 (steps 1000-1001) accepted"
    cfg = ProfilingConfig(
        on_demand=True, use_pytorch_profiler=True, profile_step_start=0, profile_step_end=1, output_dir=str(tmp_path)
    )
    scoped = []
    with ProfilingController(cfg, rank=0, world_size=2) as ctl:
        publish_request(tmp_path, 1000, 1002, [0], False)
        step = 0
        deadline = time.monotonic() + 60
        while "on-demand request 1 " not in caplog.text and time.monotonic() < deadline:  # accepted, or why not
            with ctl.step(step):
                time.sleep(0.002)
            step += 1
        assert accepted in caplog.text
        for step in (999, 1000, 1001, 1002):
            scope = ctl.step(step)
            if scope is not NOOP:
                scoped.append(step)
            with scope:
                pass
    assert scoped == [1000, 1001]
    traces = on_demand_traces(tmp_path)
    [(rank, first, last, path)] = traces[1]
    assert (rank, first, last) == (0, 1000, 1001)
    assert ctl.artifacts == [traces[None][0][3], path]  # the configured window's trace is kept too
    progress = read_progress(tmp_path)  # rank 0 sampled real steps for the trigger
    assert progress.state == "finished" and isinstance(progress.step, int) and 0 <= progress.step <= 1002
