"""On-demand profiling in one process: the file protocol, the trigger CLI, and a real controller
with its poller thread picking requests up while a loop runs (real torch.profiler traces).
The 2-rank torchrun job is in test_on_demand_torchrun.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest
import torch

from bridge_plugins import ProfilingConfig, ProfilingController
from bridge_plugins.cli import main as cli_main
from bridge_plugins.jobdir.on_demand import (
    MAX_FILE_BYTES,
    POLL_ENV,
    Progress,
    ProtocolError,
    list_requests,
    new_progress,
    plan_start,
    progress_path,
    publish_request,
    read_progress,
    read_request,
    requests_dir,
    write_progress,
)
from tests.on_demand_support import on_demand_traces, wait_for
from tests.support import ROOT, clean_env, trace_steps


# ----------------------------------------------------------------------------- protocol
def test_requests_get_increasing_ids_and_never_overwrite(tmp_path):
    ids = []
    threads = [
        threading.Thread(target=lambda: ids.append(publish_request(tmp_path, 10, 12, [0], False).id)) for _ in range(12)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(ids) == list(range(1, 13))
    assert [n for n, _ in list_requests(tmp_path)] == [f"{i}.json" for i in range(1, 13)]
    assert os.listdir(requests_dir(tmp_path)) and not [
        n for n in os.listdir(requests_dir(tmp_path)) if n.startswith(".")
    ]
    assert read_request(requests_dir(tmp_path) / "3.json").id == 3


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


GOOD = {"id": 7, "start": 10, "end": 12, "ranks": [0], "memory": False, "created": 1.0}


@pytest.mark.parametrize(
    "content,message",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON list, not an object"),
        (json.dumps({**GOOD, "start": "10"}), "start='10' must be an int"),
        (json.dumps({**GOOD, "start": True}), "start=True must be an int"),
        (json.dumps({**GOOD, "end": 10}), "must span 1 to 1000 steps"),
        (json.dumps({**GOOD, "end": 5000}), "must span 1 to 1000 steps"),
        (json.dumps({**GOOD, "ranks": [0, 0]}), "distinct ints"),
        (json.dumps({**GOOD, "ranks": "0"}), "ranks='0'"),
        (json.dumps({**GOOD, "memory": "yes"}), "memory='yes' must be true or false"),
        (json.dumps({**GOOD, "id": 8}), "differs from the 7 in its file name"),
        (json.dumps({**GOOD, "extra": 1}), "unknown keys ['extra']"),
        (json.dumps({k: v for k, v in GOOD.items() if k != "created"}), "missing keys ['created']"),
        ("\xff\xfe", "not valid JSON"),
        (" " * (MAX_FILE_BYTES + 1), "more than the"),
    ],
)
def test_malformed_request_files_are_rejected_with_the_reason(tmp_path, content, message):
    path = _write(requests_dir(tmp_path) / "7.json", content)
    with pytest.raises(ProtocolError, match="7.json") as e:
        read_request(path)
    assert message in str(e.value)


def test_symlinks_fifos_and_directories_are_not_read(tmp_path):
    good = _write(tmp_path / "elsewhere.json", json.dumps(GOOD))
    d = requests_dir(tmp_path)
    d.mkdir(parents=True)
    (d / "7.json").symlink_to(good)
    os.mkfifo(d / "8.json")  # opening it for reading must not block the poller
    (d / "9.json").mkdir()
    with pytest.raises(ProtocolError, match="is a symlink"):
        read_request(d / "7.json")
    with pytest.raises(ProtocolError, match="not a regular file"):
        read_request(d / "8.json")
    with pytest.raises(ProtocolError, match="not a regular file"):
        read_request(d / "9.json")


def progress(step=100, rate=10.0, interval=1.0, window=None, at=1000.0, **kw):
    return Progress(
        state="running",
        step=step,
        step_time=at,
        steps_per_s=rate,
        written=at,
        poll_interval_s=interval,
        world_size=2,
        window=window,
        **kw,
    )


def test_start_is_ahead_by_two_polls_plus_margin_and_clear_of_other_windows():
    # 100 + 10 steps/s * (2 s since the sample + 2 polls + 1 s safety) + 2 margin
    assert plan_start(progress(), 1002.0, [], 5) == 100 + 20 + 30 + 2
    assert plan_start(progress(interval=0.25), 1000.0, [], 5) == 100 + 15 + 2
    # the configured window 135-139 and a request 140-144 are in the way of 132-136: start after both
    assert plan_start(progress(), 1000.0, [(140, 145), (135, 140)], 5) == 145
    assert plan_start(progress(), 1000.0, [(137, 150)], 5) == 132  # 132-136 fits before it
    assert plan_start(progress(), 1000.0, [(100, 120)], 5) == 132  # a window already over is no obstacle


def test_a_paused_job_is_not_extrapolated():
    # step 100 began 60 s ago (evaluation, a checkpoint): at most 2 polls + 1 step of elapsed time counts
    assert plan_start(progress(), 1060.0, [], 5) == 100 + 21 + 30 + 2


def test_progress_round_trips_and_rejects_wrong_types(tmp_path):
    p = new_progress(
        state="running", step=3, step_time=1.0, steps_per_s=2.0, poll_interval_s=1.0, world_size=2, window=(4, 6)
    )
    write_progress(tmp_path, p)
    assert read_progress(tmp_path) == p
    _write(progress_path(tmp_path), json.dumps({**json.loads(progress_path(tmp_path).read_text()), "step": "3"}))
    with pytest.raises(ProtocolError, match="wrong type"):
        read_progress(tmp_path)


# ----------------------------------------------------------------------------- CLI
def cli(capsys, *args):
    rc = cli_main(["trigger", *map(str, args)])
    out = capsys.readouterr()
    return rc, out.out, out.err


def fresh_progress(out, **kw):
    values = dict(state="running", step=50, step_time=time.time(), steps_per_s=20.0, poll_interval_s=1.0, world_size=2)
    values.update(kw)
    write_progress(out, new_progress(**values))


@pytest.mark.parametrize(
    "setup,args,message",
    [
        (None, ["--steps", "3"], "progress.json does not exist: the job under"),
        (None, ["--steps", "3"], "has not started training yet"),
        (dict(state="finished"), ["--steps", "3"], "has finished"),
        (dict(steps_per_s=None), ["--steps", "3"], "not reported a step rate yet"),
        (dict(), ["--steps", "0"], "--steps 0: give 1 to 1000 steps"),
        (dict(), ["--steps", "3", "--ranks", "0;1"], "--ranks '0;1': give global ranks"),
        (dict(), ["--steps", "3", "--ranks", "1,1"], "distinct"),
        (dict(), ["--steps", "3", "--ranks", "0,5"], "rank(s) [5] outside the job's 2 rank(s)"),
    ],
)
def test_bad_trigger_input_is_one_line_and_exit_2(tmp_path, capsys, setup, args, message):
    if setup is not None:
        fresh_progress(tmp_path, **setup)
    rc, out, err = cli(capsys, tmp_path, *args)
    assert rc == 2 and out == ""
    assert err.startswith("bridge-plugins trigger: error: ") and message in err and err.count("\n") == 1, err
    assert list_requests(tmp_path) == []


def test_trigger_refuses_a_job_that_stopped_writing_progress(tmp_path, capsys):
    fresh_progress(tmp_path)
    data = json.loads(progress_path(tmp_path).read_text())
    _write(progress_path(tmp_path), json.dumps({**data, "written": time.time() - 60}))
    rc, _, err = cli(capsys, tmp_path, "--steps", "3")
    assert rc == 2 and "last written 60 s ago: the job is not running" in err


def test_trigger_writes_a_request_after_the_configured_window_and_earlier_requests(tmp_path, capsys):
    fresh_progress(tmp_path, window=[100, 130])  # step 50 at 20 steps/s: 112 without the window
    rc, out, _ = cli(capsys, tmp_path, "--steps", "4", "--ranks", "all", "--memory")
    first = read_request(requests_dir(tmp_path) / "1.json")
    assert rc == 0 and (first.start, first.end, first.ranks, first.memory) == (130, 134, (), True)
    assert "request 1: ranks [0, 1] profile steps 130-133 with a memory snapshot" in out
    assert "rank0_steps130-133_trigger1.pt.trace.json.gz" in out
    rc, out, _ = cli(capsys, tmp_path, "--steps", "2", "--ranks", "1")
    second = read_request(requests_dir(tmp_path) / "2.json")
    assert rc == 0 and (second.start, second.end, second.ranks) == (134, 136, (1,))


def test_cli_error_has_no_traceback_as_a_command(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "bridge_plugins", "trigger", str(tmp_path / "nope"), "--steps", "2"],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(
        f"bridge-plugins trigger: error: {tmp_path / 'nope'} does not exist yet: the job has not created its output dir"
    )
    assert proc.stderr.count("\n") == 1


# ----------------------------------------------------------------------------- a real controller
@pytest.fixture
def fast_poll(monkeypatch):
    monkeypatch.setenv(POLL_ENV, "0.05")


def loop(ctl, steps, at_step=None, sleep=0.01):
    """Run ``steps`` with a matmul and a short sleep per step; call at_step[i]() after step i."""
    x = torch.randn(32, 32)
    with ctl:
        for i in range(steps):
            with ctl.step(i):
                (x @ x).sum()
                time.sleep(sleep)
            if at_step and i in at_step:
                at_step[i]()
    return ctl


def test_triggers_profile_the_requested_steps_into_separate_files(tmp_path, fast_poll, capsys):
    results = []

    def user():  # beside training, as a user would: trigger, wait for the trace, trigger again
        try:
            assert wait_for(lambda: progress_path(tmp_path).exists() and read_progress(tmp_path).steps_per_s)
            results.append(cli(capsys, tmp_path, "--steps", 3))
            assert wait_for(lambda: 1 in on_demand_traces(tmp_path), 30)
            results.append(cli(capsys, tmp_path, "--steps", 2))
            assert wait_for(lambda: 2 in on_demand_traces(tmp_path), 30)
        except BaseException as e:
            results.append(e)

    thread = threading.Thread(target=user)
    thread.start()
    x = torch.randn(32, 32)
    with ProfilingController(ProfilingConfig(on_demand=True, output_dir=str(tmp_path)), rank=0, world_size=1) as ctl:
        for step in range(5000):
            with ctl.step(step):
                (x @ x).sum()
                time.sleep(0.01)
            if not thread.is_alive():
                break
    thread.join()
    assert [r[0] for r in results] == [0, 0], results
    traces = on_demand_traces(tmp_path)
    assert sorted(traces) == [1, 2]
    for trigger_id, steps in ((1, 3), (2, 2)):
        [(rank, first, last, path)] = traces[trigger_id]
        request = read_request(requests_dir(tmp_path) / f"{trigger_id}.json")
        assert (rank, first, last + 1) == (0, request.start, request.end) and last - first + 1 == steps
        assert trace_steps(path) == set(range(first, last + 1))
    assert sorted(ctl.artifacts) == sorted(t[0][3] for t in traces.values())
    assert ctl.selected is False  # on_demand alone configures no window
    assert read_progress(tmp_path).state == "finished" and read_progress(tmp_path).step <= step  # the last sampled step


def test_rules_for_stale_overlapping_hostile_and_other_rank_requests(tmp_path, fast_poll, caplog):
    out = tmp_path
    cfg = ProfilingConfig(
        use_pytorch_profiler=True,
        record_memory_history=True,
        profile_step_start=60,
        profile_step_end=63,
        on_demand=True,
        output_dir=str(out),
    )
    before = publish_request(out, 90, 92, [], False)  # left by an earlier job: ignored without being read

    def hostile():
        publish_request(out, 70, 73, [], False)  # 2: accepted
        publish_request(out, 72, 75, [0], False)  # 3: overlaps 2
        publish_request(out, 61, 64, [], False)  # 4: overlaps the configured window 60-62
        publish_request(out, 2, 4, [], False)  # 5: stale
        publish_request(out, 80, 82, [1], False)  # 6: names rank 1 only
        publish_request(out, 84, 86, [0], True)  # 7: accepted; memory: no CUDA here, a warning
        publish_request(out, 50, 52, [0], True)  # 8: accepted; memory stays with the configured history
        d = requests_dir(out)
        _write(d / "20.json", "{garbage")
        (d / "21.json").symlink_to(d / "7.json")
        os.mkfifo(d / "22.json")
        _write(d / "notes.txt", "hello")

    loop(ProfilingController(cfg, rank=0, world_size=2), 100, {5: hostile}, sleep=0.02)
    traces = on_demand_traces(out)
    assert {k: [(r, a, b) for r, a, b, _ in v] for k, v in traces.items()} == {
        None: [(0, 60, 62)],
        2: [(0, 70, 72)],
        7: [(0, 84, 85)],
        8: [(0, 50, 51)],
    }
    log = caplog.text
    assert "1 request file(s) from before this job started are ignored" in log and before.id == 1
    assert "on-demand request 3 (steps 72-74) ignored: it overlaps on-demand request 2" in log
    assert "on-demand request 4 (steps 61-63) ignored: it overlaps the configured profiling window (steps 60-62)" in log
    assert "on-demand request 5 (steps 2-3) ignored: stale, this rank is already at step" in log
    assert (
        "20.json is not valid JSON" in log and "21.json is a symlink" in log and "22.json is not a regular file" in log
    )
    assert "notes.txt: not a request file name" in log
    assert "record_memory_history requested but CUDA is not available" in log
    assert (
        "request 8 (steps 50-51): no memory snapshot of its own, the configured memory history records until step 62"
        in log
    )
    assert read_progress(out).state == "finished"  # the loop ran to its end


def test_back_to_back_on_demand_and_configured_windows(tmp_path, fast_poll):
    cfg = ProfilingConfig(
        use_pytorch_profiler=True, profile_step_start=46, profile_step_end=48, on_demand=True, output_dir=str(tmp_path)
    )

    def ask():
        publish_request(tmp_path, 40, 43, [], False)
        publish_request(tmp_path, 43, 46, [0], False)  # opens at the step after 42, then the configured 46-47

    loop(ProfilingController(cfg, rank=0, world_size=1), 55, {3: ask}, sleep=0.02)
    traces = {k: [(a, b) for _, a, b, _ in v] for k, v in on_demand_traces(tmp_path).items()}
    assert traces == {1: [(40, 42)], 2: [(43, 45)], None: [(46, 47)]}
    for v in on_demand_traces(tmp_path).values():
        assert trace_steps(v[0][3]) == set(range(v[0][1], v[0][2] + 1))


@pytest.mark.parametrize(
    "configured",
    ["", "use_pytorch_profiler=True, profile_step_start=150, profile_step_end=152, "],
    ids=["on_demand_only", "with_a_configured_window_whose_handler_runs_first"],
)
@pytest.mark.slow
def test_sigterm_inside_an_on_demand_window_writes_what_it_captured(tmp_path, configured):
    job = f"""
import logging, sys, time, torch
from bridge_plugins import ProfilingConfig, ProfilingController
from bridge_plugins.jobdir.on_demand import publish_request
logging.basicConfig(level=logging.INFO, stream=sys.stdout)
out, x = sys.argv[1], torch.randn(32, 32)
with ProfilingController(ProfilingConfig({configured}on_demand=True, output_dir=out), rank=0) as ctl:
    for step in range(200):
        with ctl.step(step):
            (x @ x).sum(); time.sleep(0.01)
            if step == 2:
                publish_request(out, 30, 40, [0], False)
            if step == 33:
                print("IN STEP 33", flush=True); time.sleep(60)
print("NOT REACHED", flush=True)
"""
    proc = subprocess.Popen(
        [sys.executable, "-c", job, str(tmp_path)],
        cwd=ROOT,
        env=clean_env(**{POLL_ENV: "0.05"}),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if "IN STEP 33" in line:
            break
    proc.send_signal(15)
    rest, _ = proc.communicate(timeout=60)
    output = "".join(lines) + rest
    assert proc.returncode == -15, output
    [(rank, first, last, path)] = on_demand_traces(tmp_path)[1]
    assert (first, last) == (30, 33) and trace_steps(path) == {30, 31, 32, 33}
    assert "closed early (SIGTERM received during step 33): captured steps 30-33" in output


def test_poller_failures_never_stop_training(tmp_path, fast_poll, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("")
    ctl = loop(ProfilingController(ProfilingConfig(on_demand=True, output_dir=str(blocker / "sub")), rank=0), 30)
    assert ctl.artifacts == []
    assert "on-demand directory" in caplog.text and "unusable" in caplog.text
    assert caplog.text.count("on-demand polling failed") == 1  # said once, not every poll


def test_off_by_default_nothing_polls(tmp_path):
    ctl = loop(ProfilingController(ProfilingConfig(use_pytorch_profiler=True, output_dir=str(tmp_path)), rank=0), 3)
    assert not (tmp_path / "on_demand").exists() and "step" not in vars(ctl)
    assert not [t for t in threading.enumerate() if t.name == "bridge_plugins-on-demand"]


def test_sigterm_while_the_training_thread_holds_the_on_demand_lock_does_not_hang(tmp_path):
    """The SIGTERM handler runs on the training thread, possibly inside its own critical section
    (taken twice per step while a window runs): closing must not wait for that lock. Reaching
    into the controller's ``_lock`` is the only way to land the signal there deterministically."""
    script = f"""
import os, signal, sys
from bridge_plugins import ProfilingConfig, ProfilingController
ctl = ProfilingController(ProfilingConfig(on_demand=True, output_dir={str(tmp_path)!r}), rank=0, world_size=1)
with ctl:
    with ctl.step(0):
        pass
    with ctl._lock:
        os.kill(os.getpid(), signal.SIGTERM)
print("not reached")
"""
    proc = subprocess.run([sys.executable, "-c", script], env=clean_env(), capture_output=True, text=True, timeout=20)
    assert proc.returncode == -15, proc.stdout + proc.stderr  # died of SIGTERM, did not hang
    assert read_progress(tmp_path).state == "finished"


def test_a_blocked_progress_file_leaves_no_temp_files_and_rank_0_still_takes_requests(tmp_path, fast_poll, caplog):
    (tmp_path / "on_demand" / "progress.json").mkdir(parents=True)  # a directory planted where progress goes

    def ask():
        publish_request(tmp_path, 20, 23, [0], False)

    ctl = loop(ProfilingController(ProfilingConfig(on_demand=True, output_dir=str(tmp_path)), rank=0), 40, {5: ask})
    assert [(r, a, b) for r, a, b, _ in on_demand_traces(tmp_path)[1]] == [(0, 20, 22)]
    assert len(ctl.artifacts) == 1
    leftovers = [p.name for p in (tmp_path / "on_demand").iterdir() if p.name.startswith(".")]
    assert leftovers == [], leftovers
    # the failed write is reported, once (not every poll), with its cause; so is the final one
    said = "rank 0: writing on-demand progress failed (IsADirectoryError: "
    assert caplog.text.count(said) == 1 and "; training continues" in caplog.text.split(said)[1].splitlines()[0]
    assert "rank 0: writing the final on-demand progress failed (" in caplog.text


def test_the_job_accepts_every_step_count_the_trigger_accepts():
    """The trigger allows 1..MAX_STEPS steps; the job must accept MAX_STEPS too (not only fewer)."""
    from bridge_plugins.jobdir.on_demand import MAX_STEPS, ProtocolError, parse_request

    ok = dict(id=1, start=10, end=10 + MAX_STEPS, ranks=[], memory=False, created=1.0)
    assert parse_request(ok).end - parse_request(ok).start == MAX_STEPS
    with pytest.raises(ProtocolError, match=f"must span 1 to {MAX_STEPS} steps"):
        parse_request({**ok, "end": 11 + MAX_STEPS})


def test_a_request_for_the_current_step_is_accepted_and_one_for_the_step_before_is_stale(tmp_path, caplog):
    """The stale boundary: at step 10 a request starting at 10 still gets all its steps (the
    controller opens the window in this same step); one starting at 9 cannot, and is refused."""
    from bridge_plugins.jobdir.on_demand import Request
    from bridge_plugins.runtime.on_demand import Acceptance

    acceptance = Acceptance(ProfilingConfig(on_demand=True, output_dir=str(tmp_path)), 0, 1, tmp_path, False)
    window = acceptance.window_config(Request(1, 10, 12), step=10)
    assert window is not None and (window.profile_step_start, window.profile_step_end) == (10, 12)
    assert acceptance.window_config(Request(2, 20, 22), step=21) is None
    assert "on-demand request 2 (steps 20-21) ignored: stale, this rank is already at step 21" in caplog.text
    assert "request 1" not in caplog.text and acceptance.spans == [(10, 12, 1)]
