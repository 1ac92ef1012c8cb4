"""The window's states and the controller's edges, fast: the states a window goes through, where the
rank comes from, an output_dir the controller cannot use, a window with no backend left, SIGTERM
while a window is written, and the on-demand windows (accepted, refused a snapshot of their own,
failing to build, closed after the configured one). Backends are the real memory-history one (a
no-op without CUDA) or ``Recorder`` (window_support.py). Mutation testing (scripts/mutation.sh
window) runs these for every mutant."""

from __future__ import annotations

import logging
import os
import signal
import time

import pytest

from bridge_plugins import ProfilingConfig, ProfilingController
from bridge_plugins.jobdir.on_demand import POLL_ENV, publish_request
from bridge_plugins.runtime import registry
from bridge_plugins.runtime.signals import SignalGuard
from bridge_plugins.runtime.steps import NOOP
from bridge_plugins.runtime.window import NEVER, Window
from tests.runtime.window_support import CALLS, Recorder, run

pytestmark = pytest.mark.skipif(
    __import__("torch").cuda.is_available(), reason="the memory backend records on CUDA: not the no-op these need"
)

RECORDER = "tests.runtime.window_support:Recorder"


def test_a_window_goes_idle_armed_active_closing_done(tmp_path, recorders, monkeypatch):
    cfg = ProfilingConfig(profile_step_start=3, profile_step_end=5, output_dir=str(tmp_path))
    window = Window(cfg, 0, 4, tmp_path, SignalGuard(lambda: None, "rank 0"))
    assert (window.state, window.next, window.backends, window.captured_steps) == ("idle", NEVER, [], None)
    seen = []  # (call, the window's state then, whether no step reaches it)
    monkeypatch.setattr(
        Recorder,
        "watch",
        lambda b, call: b.name == "recorder" and seen.append((call, window.state, window.next == NEVER)),
    )
    window.build().arm()
    assert (window.state, window.next) == ("armed", 3)
    for step in (3, 4):
        with window.step(step):
            pass
    assert (window.state, window.next, window.captured_steps) == ("done", NEVER, range(3, 5))
    window.exit("the training loop ended")
    assert window.state == "done"
    assert seen == [
        ("on_enter", "idle", True),
        ("window_begin", "active", False),
        ("step_begin", "active", False),
        ("step_end", "active", False),
        ("step_begin", "active", False),
        ("step_end", "active", False),
        ("window_end", "closing", True),
        ("on_exit", "done", True),
    ]


def test_rank_and_world_size_come_from_the_environment_without_overrides(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "4")
    cfg = ProfilingConfig(
        record_memory_history=True,
        profile_step_start=0,
        profile_step_end=1,
        profile_ranks=[2],
        output_dir=str(tmp_path),
    )
    with ProfilingController(cfg) as ctl:
        assert (ctl.rank, ctl.world_size, ctl.selected) == (2, 4, True)


def test_an_output_dir_it_cannot_use_turns_profiling_off_and_training_goes_on(tmp_path, caplog, recorders):
    file = tmp_path / "a-file"
    file.write_text("")
    before = signal.getsignal(signal.SIGTERM)
    handlers = []
    ctl, lines, scoped = run(
        tmp_path, caplog, range(5), 1, 3, output_dir=str(file), on_step=lambda i: handlers.append(signal.getsignal(15))
    )
    assert (ctl.selected, ctl.captured_steps, scoped, ctl.artifacts, CALLS) == (False, None, [], [], [])
    assert lines == [
        f"rank 0: profiling is off for this run: ProfilingConfig.output_dir={str(file)!r} is an existing file ({file}); "
        "give a directory; training continues"
    ]
    assert handlers == [before] * 5  # no SIGTERM handler of ours either


def test_a_window_whose_backends_all_fail_to_build_says_nothing_profiles(tmp_path, caplog):
    (tmp_path / "snap.pickle").mkdir()
    ctl, lines, scoped = run(tmp_path, caplog, range(3), 1, 2, memory_snapshot_path="snap.pickle")
    assert scoped == [1] and ctl.artifacts == []
    assert lines == [
        f"rank 0: memory history is off for this run (ProfilingConfig.memory_snapshot_path='snap.pickle' names a "
        f"directory ({tmp_path / 'snap.pickle'}); give a file inside it, e.g. 'snap.pickle/memory_snapshot.pickle'); "
        "training continues",
        f"rank 0: profiling steps 1-1 with nothing; artifacts under {tmp_path}",
        "rank 0: profiling window closed: captured steps 1-1",
    ]


def test_only_a_rank_that_profiles_takes_sigterm(tmp_path, caplog):
    before = signal.getsignal(signal.SIGTERM)
    for rank, takes_it in ((1, False), (0, True)):
        handlers: list = []
        run(
            tmp_path,
            caplog,
            [0],
            0,
            1,
            rank=rank,
            ranks=[0],
            on_step=lambda i, h=handlers: h.append(signal.getsignal(15)),
        )
        assert (handlers[0] != before) is takes_it
        assert signal.getsignal(signal.SIGTERM) == before  # given back at exit


def test_the_loops_exception_goes_through_the_controller(tmp_path):
    cfg = ProfilingConfig(
        record_memory_history=True, profile_step_start=0, profile_step_end=2, output_dir=str(tmp_path)
    )
    ctl = ProfilingController(cfg, rank=0, world_size=1)
    with pytest.raises(ValueError, match="^boom$"), ctl, ctl.step(0):
        raise ValueError("boom")
    assert ctl.captured_steps == range(0, 1)


def test_a_sigterm_while_the_window_is_written_is_held_named_then_delivered(tmp_path, caplog, recorders, monkeypatch):
    received = []

    def sigterm_in_window_end(backend, call):
        if call == "window_end" and backend.name == "recorder":
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(Recorder, "watch", sigterm_in_window_end)
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: received.append(signum))
    try:
        ctl, lines, scoped = run(tmp_path, caplog, range(8), 3, 5)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert received == [signal.SIGTERM] and scoped == [3, 4] and ctl.captured_steps == range(3, 5)
    assert lines[1:3] == [
        "rank 0: SIGTERM received while the profile is being written: held until the write is done (SIGKILL "
        "abandons it)",
        "rank 0: profiling window closed: captured steps 3-4",
    ]


# ----------------------------------------------------------------------------- on-demand windows
def on_demand_run(tmp_path, caplog, monkeypatch, backends, profile_ranks=(0,)):
    """A controller with on-demand on and a configured window at steps 2000-2001 (memory history) that
    the loop never reaches; request 1 asks for steps 1000-1001 with a memory snapshot on rank 0. Steps
    from 0 until the request is decided (in the log: an event, not a sleep), then 999-1003.
    Returns (log lines, the steps 999-1003 that got a scope)."""
    monkeypatch.setenv(POLL_ENV, "0.01")
    monkeypatch.setattr(registry, "BACKENDS", backends)
    caplog.set_level(logging.INFO, logger="bridge_plugins")
    cfg = ProfilingConfig(
        on_demand=True,
        record_memory_history=True,
        profile_step_start=2000,
        profile_step_end=2002,
        profile_ranks=list(profile_ranks),
        output_dir=str(tmp_path),
    )
    scoped = []
    with ProfilingController(cfg, rank=0, world_size=4) as ctl:
        publish_request(tmp_path, 1000, 1002, [0], True)
        step, deadline = 0, time.monotonic() + 60
        while "on-demand request 1 " not in caplog.text and time.monotonic() < deadline:
            with ctl.step(step):
                time.sleep(0.002)  # lets the poller thread run; the loop waits on the log line
            step += 1
        for step in range(999, 1004):
            scope = ctl.step(step)
            if scope is not NOOP:
                scoped.append(step)
            with scope:
                pass
    lines = [r.getMessage() for r in caplog.records if "on-demand request" in r.getMessage()]
    return lines, scoped


@pytest.mark.parametrize("configured_on_rank_0", [True, False])
def test_an_on_demand_window_is_built_for_its_request_and_closed_after_the_configured_one(
    tmp_path, caplog, monkeypatch, configured_on_rank_0
):
    seen = []  # (trigger, call, the config a backend was given: steps, memory, output_dir)
    monkeypatch.setattr(
        Recorder,
        "watch",
        lambda b, call: seen.append(
            (
                b.ctx.trigger,
                call,
                b.cfg.profile_step_start,
                b.cfg.profile_step_end,
                b.cfg.record_memory_history,
                b.cfg.output_dir,
            )
        ),
    )
    monkeypatch.setattr(Recorder, "fail_in", None)
    CALLS.clear()
    ranks = (0,) if configured_on_rank_0 else (1,)
    lines, scoped = on_demand_run(tmp_path, caplog, monkeypatch, (registry.Entry(lambda c: True, RECORDER),), ranks)
    assert scoped == [1000, 1001]
    if configured_on_rank_0:  # its memory history records from the start to step 2001: the request gets none
        assert lines == [
            "rank 0: on-demand request 1 (steps 1000-1001): no memory snapshot of its own, the configured memory "
            "history records until step 2001",
            "rank 0: on-demand request 1 (steps 1000-1001) accepted",
        ]
    else:
        assert lines == ["rank 0: on-demand request 1 (steps 1000-1001) accepted with a memory snapshot"]
    mine = [c for c in CALLS if c[1] == "init" and c[5] == 1]
    assert mine == [("recorder", "init", 0, 4, tmp_path, 1, tmp_path)]
    assert [s for s in seen if s[:2] == (1, "on_enter")] == [
        (1, "on_enter", 1000, 1002, not configured_on_rank_0, str(tmp_path))
    ]
    # at exit the configured window closes first (it never opened here: it only finishes), then the on-demand one
    exits = [trigger for trigger, call, *_ in seen if call == "on_exit"]
    assert exits == ([None, 1] if configured_on_rank_0 else [1])
    assert [c for c in CALLS if c[0] == "recorder" and c[1] == "init" and c[5] is None] == (
        [("recorder", "init", 0, 4, tmp_path, None, tmp_path)] if configured_on_rank_0 else []
    )


def test_an_on_demand_window_that_fails_to_build_is_one_error_and_training_goes_on(tmp_path, caplog, monkeypatch):
    """Anything raised while an on-demand window is built (here a registry switch that raises, on the
    on-demand windows only: a stand-in for a bug) is one error line, and training goes on."""

    def switch(c: ProfilingConfig) -> bool:
        if not c.on_demand:  # the on-demand window's own config
            raise ZeroDivisionError("division by zero")
        return False

    failing = (registry.Entry(switch, "tests.runtime.window_support:NoSuchBackend"),)
    lines, scoped = on_demand_run(tmp_path, caplog, monkeypatch, failing)
    assert scoped == []
    assert lines[-1] == "rank 0: on-demand request 1 failed (ZeroDivisionError: division by zero); training continues"


def test_a_backend_that_cannot_be_imported_is_off_and_the_others_still_profile(tmp_path, caplog, monkeypatch):
    """A broken install (a backend's module or class missing) must not stop training: that backend
    is off with one error line, and the configured window still profiles with the others."""
    broken = registry.Entry(lambda c: True, "tests.runtime.window_support:NoSuchBackend")
    monkeypatch.setattr(registry, "BACKENDS", (broken, *registry.BACKENDS))
    caplog.set_level(logging.INFO, logger="bridge_plugins")
    cfg = ProfilingConfig(
        use_pytorch_profiler=True, profile_step_start=1, profile_step_end=2, profile_ranks=[0], output_dir=str(tmp_path)
    )
    with ProfilingController(cfg, rank=0, world_size=1) as ctl:
        for step in range(3):
            with ctl.step(step):
                pass
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [
        "rank 0: NoSuchBackend is off for this run (AttributeError: module 'tests.runtime.window_support' has no "
        "attribute 'NoSuchBackend'); training continues"
    ]
    assert [p.name for p in tmp_path.rglob("*.json*")], "the PyTorch profiler still wrote its trace"
