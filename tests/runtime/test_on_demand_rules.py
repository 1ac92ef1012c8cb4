"""The on-demand rules as plain functions, fast: which requests a rank accepts and the window it
gets (Acceptance.window_config), what a request file may hold (parse_request), where the trigger
starts a window (plan_start) and the poll interval. The poller and real traces are in
test_on_demand.py; mutation testing (scripts/mutation.sh on_demand) runs these for every mutant."""

from __future__ import annotations

import logging
import threading

import pytest

from bridge_plugins import ProfilingConfig
from bridge_plugins.jobdir.on_demand import (
    DEFAULT_POLL_S,
    MAX_STEPS,
    POLL_ENV,
    Progress,
    ProtocolError,
    Request,
    parse_request,
    plan_start,
    poll_interval,
)
from bridge_plugins.runtime.on_demand import Acceptance


def acceptance(tmp_path, rank=0, world=2, configured_memory=False, **cfg):
    config = ProfilingConfig(on_demand=True, output_dir=str(tmp_path), **cfg)
    return Acceptance(config, rank, world, tmp_path, configured_memory)


@pytest.fixture
def log(caplog):
    caplog.set_level(logging.DEBUG, logger="bridge_plugins")
    return lambda: [r.getMessage() for r in caplog.records]


def test_an_accepted_request_becomes_a_pytorch_window_of_its_steps(tmp_path, log):
    a = acceptance(
        tmp_path,
        use_nsys_profiler=True,
        record_memory_history=True,
        profile_ranks=[1],
        profile_step_start=50,
        profile_step_end=52,
    )
    cfg = a.window_config(Request(4, 10, 13, (), True), step=5)
    assert (cfg.profile_step_start, cfg.profile_step_end, cfg.profile_ranks) == (10, 13, [])
    assert (cfg.use_pytorch_profiler, cfg.use_nsys_profiler, cfg.on_demand) == (True, False, False)
    assert cfg.record_memory_history is True and cfg.output_dir == str(tmp_path)
    assert a.spans == [(10, 13, 4)] and log() == []


def test_a_request_starting_before_this_rank_s_step_is_stale_and_takes_no_steps(tmp_path, log):
    a = acceptance(tmp_path)
    assert a.window_config(Request(1, 9, 12), step=10) is None
    assert log() == ["rank 0: on-demand request 1 (steps 9-11) ignored: stale, this rank is already at step 10"]
    assert a.spans == []
    assert a.window_config(Request(2, 10, 12), step=10) is not None  # starts at this step: in time


def test_the_window_writes_into_the_output_dir_the_job_resolved(tmp_path):
    """Not the configured value (None or relative: resolved once at entry, as an absolute path)."""
    for configured in (None, "profiling"):
        config = ProfilingConfig(on_demand=True, output_dir=configured)
        cfg = Acceptance(config, 0, 1, tmp_path / "resolved", False).window_config(Request(1, 10, 12), step=0)
        assert cfg.output_dir == str(tmp_path / "resolved")


def test_overlapping_the_configured_window_is_refused_but_touching_it_is_not(tmp_path, log):
    a = acceptance(tmp_path, use_pytorch_profiler=True, profile_step_start=20, profile_step_end=25)
    assert a.window_config(Request(1, 24, 26), step=0) is None
    assert log() == [
        "rank 0: on-demand request 1 (steps 24-25) ignored: it overlaps the configured profiling window (steps 20-24)"
    ]
    assert a.window_config(Request(2, 15, 21), step=0) is None
    assert a.window_config(Request(3, 25, 27), step=0) is not None  # right after it
    assert a.window_config(Request(4, 18, 20), step=0) is not None  # right before it
    assert a.spans == [(25, 27, 3), (18, 20, 4)]


def test_without_a_configured_window_its_steps_are_free(tmp_path):
    a = acceptance(tmp_path, profile_step_start=20, profile_step_end=25)  # no profiler: no window
    assert a.window_config(Request(1, 20, 22), step=0) is not None


def test_overlapping_an_accepted_request_is_refused_naming_it(tmp_path, log):
    a = acceptance(tmp_path)
    assert a.window_config(Request(1, 10, 13), step=0) is not None
    assert a.window_config(Request(2, 12, 14), step=0) is None
    assert a.window_config(Request(3, 9, 11), step=0) is None
    assert a.window_config(Request(4, 13, 14), step=0) is not None  # adjacent
    assert log() == [
        "rank 0: on-demand request 2 (steps 12-13) ignored: it overlaps on-demand request 1",
        "rank 0: on-demand request 3 (steps 9-10) ignored: it overlaps on-demand request 1",
    ]


def test_a_request_for_other_ranks_still_takes_its_steps_on_this_one(tmp_path, log):
    """Every rank records every accepted span, so all ranks refuse the same later requests."""
    a = acceptance(tmp_path, rank=0, world=4)
    assert a.window_config(Request(1, 10, 12, (1, 2)), step=0) is None
    assert a.spans == [(10, 12, 1)]
    assert log() == ["rank 0: on-demand request 1 (steps 10-11) does not name this rank"]
    assert a.window_config(Request(2, 11, 13, (0,)), step=0) is None  # overlaps 1 here too
    assert acceptance(tmp_path, rank=2, world=4).window_config(Request(1, 10, 12, (1, 2)), step=0) is not None


def test_ranks_outside_the_world_are_named_by_rank_0_only(tmp_path, log):
    assert acceptance(tmp_path, rank=0, world=2).window_config(Request(1, 10, 12, (0, 2, 3)), 0) is not None
    assert log() == [
        "rank 0: on-demand request 1 (steps 10-11) names rank(s) [2, 3] outside the world of 2: they do not profile"
    ]
    assert acceptance(tmp_path, rank=1, world=2).window_config(Request(1, 10, 12, (1, 2)), 0) is not None
    assert len(log()) == 1  # rank 1 says nothing
    assert acceptance(tmp_path, rank=0, world=3).window_config(Request(1, 10, 12, (0, 2)), 0) is not None
    assert len(log()) == 1  # rank 2 is inside a world of 3


def test_memory_stays_with_the_configured_history_until_its_window_ends(tmp_path, log):
    cfg = dict(use_pytorch_profiler=True, record_memory_history=True, profile_step_start=20, profile_step_end=25)
    a = acceptance(tmp_path, configured_memory=True, **cfg)
    assert a.window_config(Request(1, 10, 12, (), True), 0).record_memory_history is False
    assert log() == [
        "rank 0: on-demand request 1 (steps 10-11): no memory snapshot of its own, the configured memory history "
        "records until step 24"
    ]
    assert a.window_config(Request(2, 25, 27, (), True), 0).record_memory_history is True  # after it: its own
    assert a.window_config(Request(3, 30, 32, (), False), 0).record_memory_history is False
    other = acceptance(tmp_path, configured_memory=False, **cfg)  # a rank the configured window does not select
    assert other.window_config(Request(1, 10, 12, (), True), 0).record_memory_history is True


def test_id_and_start_may_be_0():
    data = dict(id=0, start=0, end=1, ranks=[], memory=False, created=0)
    assert parse_request(data) == Request(0, 0, 1, (), False, 0.0)


@pytest.mark.parametrize("span", [1, MAX_STEPS])
def test_a_request_spans_1_to_max_steps(span):
    data = dict(id=1, start=10, end=10 + span, ranks=[], memory=False, created=1)
    assert parse_request(data) == Request(1, 10, 10 + span, (), False, 1.0)


@pytest.mark.parametrize(
    "change,message",
    [
        (dict(end=10), "request: steps 10..10 (end exclusive) must span 1 to 1000 steps"),
        (dict(end=9), "must span 1 to"),
        (dict(end=10 + MAX_STEPS + 1), "must span 1 to"),
        (dict(start=-1), "request: start=-1 must be an int >= 0"),
        (dict(id=-1), "request: id=-1 must be an int >= 0"),
        (dict(end=-1), "request: end=-1 must be an int >= 0"),
        (dict(id=1.0), "id=1.0 must be an int"),
        (dict(ranks=[-1]), "request: ranks=[-1] must be a list of distinct ints >= 0 ([] = every rank)"),
        (dict(ranks=[0, "1"]), "ranks=[0, '1']"),
        (dict(ranks=(0,)), "ranks=(0,)"),
        (dict(memory=1), "request: memory=1 must be true or false"),
        (dict(created=float("nan")), "request: created=nan must be a number (epoch seconds)"),
        (dict(created="1"), "created='1'"),
        (dict(created=True), "created=True"),
    ],
)
def test_bad_fields_are_named(change, message):
    data = {**dict(id=1, start=10, end=12, ranks=[0], memory=False, created=1.5), **change}
    with pytest.raises(ProtocolError) as e:
        parse_request(data)
    assert message in str(e.value)


def test_fields_are_checked_by_name_and_the_id_against_the_file(tmp_path):
    good = dict(id=3, start=10, end=12, ranks=[0, 1], memory=True, created=2)
    assert parse_request(good, "x.json", expected_id=3) == Request(3, 10, 12, (0, 1), True, 2.0)
    with pytest.raises(ProtocolError, match=r"^x\.json: id=3 differs from the 4 in its file name$"):
        parse_request(good, "x.json", expected_id=4)
    with pytest.raises(ProtocolError, match=r"^x\.json: missing keys \['memory'\], unknown keys \[\]; expected \["):
        parse_request({k: v for k, v in good.items() if k != "memory"}, "x.json")


def test_request_selects_and_overlaps():
    assert Request(1, 10, 12).selects(5) and Request(1, 10, 12, (1, 2)).selects(2)
    assert not Request(1, 10, 12, (1, 2)).selects(0)
    r = Request(1, 10, 12)
    assert r.overlaps(11, 20) and r.overlaps(0, 11) and r.overlaps(10, 12)
    assert not r.overlaps(12, 20) and not r.overlaps(0, 10)


def progress(step=100, rate=10.0, interval=1.0, at=1000.0):
    return Progress("running", step, at, rate, at, interval, 2)


def plan(*args) -> int:
    """plan_start on a thread: a loop that never ends fails the test in 10 s instead of hanging the run."""
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(plan_start(*args)), daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():
        pytest.fail("plan_start did not return in 10 s: it loops", pytrace=False)
    assert result, "plan_start raised (see the thread's exception above)"
    return result[0]


def test_plan_start_exact_values():
    assert plan(progress(), 1000.0, [], 5) == 100 + 30 + 2  # 10/s * (2 polls + 1 s) + 2
    assert plan(progress(), 1000.5, [], 5) == 100 + 5 + 30 + 2
    assert plan(progress(rate=None), 1000.0, [], 5) == 100 + 2  # no rate yet: just the margin
    assert plan(progress(rate=3.3), 1000.0, [], 5) == 100 + 10 + 2  # ceil(9.9)
    assert plan(progress(), 999.0, [], 5) == 132  # a sample from the future counts as now
    # paused: at most 2 polls and one step (0.1 s at 10/s) of extrapolation
    assert plan(progress(), 1100.0, [], 5) == 100 + 21 + 30 + 2
    assert plan(progress(interval=2.0), 1100.0, [], 5) == 100 + 41 + 50 + 2
    with pytest.raises(ValueError, match="^the job has not reported a step yet$"):
        plan_start(progress(step=None), 1000.0, [], 5)


def test_plan_start_moves_past_every_window_in_the_way():
    p = progress()  # 132 without obstacles
    assert plan(p, 1000.0, [(132, 133)], 5) == 133
    assert plan(p, 1000.0, [(136, 140)], 5) == 140  # 132-136 would touch 136
    assert plan(p, 1000.0, [(137, 140)], 5) == 132  # 132-136 fits before it
    assert plan(p, 1000.0, [(120, 132)], 5) == 132  # ends where we start
    assert plan(p, 1000.0, [(150, 160), (133, 150)], 5) == 160  # moved twice, in any order
    assert plan(p, 1000.0, [(133, 150), (152, 160)], 5) == 160  # 150-154 would hit the second


@pytest.mark.parametrize(
    "raw,value",
    [("", DEFAULT_POLL_S), ("0.05", 0.05), ("3600", 3600.0), ("3600.5", 1.0), ("0", 1.0), ("-1", 1.0), ("x", 1.0)],
)
def test_poll_interval(raw, value):
    assert poll_interval({POLL_ENV: raw}) == value
    assert DEFAULT_POLL_S == 1.0


def test_poll_interval_reads_the_environment(monkeypatch):
    monkeypatch.setenv(POLL_ENV, "0.25")
    assert poll_interval() == 0.25
    monkeypatch.delenv(POLL_ENV)
    assert poll_interval() == DEFAULT_POLL_S and poll_interval({}) == DEFAULT_POLL_S  # unset: the default
