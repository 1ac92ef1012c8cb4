"""On-demand profiling of a running 2-rank torchrun job: trigger it twice while it trains, and
check that both ranks captured the same steps, in separate files per trigger, that a malformed
and a stale request were ignored, and that training finished normally.

A Slurm variant needs only the launch: submit tests/helpers/on_demand_job.py (or recipes.train
with profiling.on_demand=true) with BRIDGE_ON_DEMAND_POLL_S=0.25 in its environment and a shared
output dir, then call ``drive_triggers(out, capsys)`` while it runs and, once sacct says
COMPLETED, ``check_triggered_job(out, first, second, <the job's log text>)``.
"""

from __future__ import annotations

import json
import re
import subprocess
import time

import pytest

from bridge_plugins.cli import main as cli_main
from bridge_plugins.on_demand import POLL_ENV, list_requests, progress_path, read_progress, read_request, requests_dir
from tests.support import ROOT, clean_env, torchrun_cmd, trace_steps
from tests.test_on_demand import on_demand_traces, wait_for

pytestmark = pytest.mark.integration

STEPS = 150  # the second window ends near step 100: the job must still run then
JOB = str(ROOT / "tests" / "helpers" / "on_demand_job.py")


def trigger(out, capsys, *args) -> int:
    """Run ``bridge-plugins trigger`` and return the id of the request it wrote."""
    assert cli_main(["trigger", str(out), *args]) == 0, capsys.readouterr().err
    return int(re.search(r"^request (\d+): ranks", capsys.readouterr().out, re.M).group(1))


def both_ranks_traced(out, trigger_id):
    return lambda: sorted(r for r, *_ in on_demand_traces(out).get(trigger_id, [])) == [0, 1]


def drive_triggers(out, capsys):
    """Trigger the job writing under ``out`` twice, with a malformed and a stale request between;
    return the two trigger ids once both ranks wrote both traces. Launcher-independent."""
    assert wait_for(lambda: progress_path(out).exists() and read_progress(out).steps_per_s, 90), "no progress"
    first = trigger(out, capsys, "--steps", "4", "--ranks", "0,1")
    assert wait_for(both_ranks_traced(out, first), 60), "trigger 1 produced no traces"
    (requests_dir(out) / f"{first + 1}.json").write_text("{not json")  # malformed
    stale = dict(id=first + 2, start=0, end=2, ranks=[], memory=False, created=time.time())
    (requests_dir(out) / f"{first + 2}.json").write_text(json.dumps(stale))
    second = trigger(out, capsys, "--steps", "3", "--ranks", "all")
    assert second == first + 3  # ids skip the two hand-written files: nothing is overwritten
    assert wait_for(both_ranks_traced(out, second), 60), "trigger 2 produced no traces"
    return first, second


def check_triggered_job(out, first, second, log_text):
    """Both ranks hold the same N consecutive steps per trigger, in separate files; the malformed
    and the stale request were logged by both ranks; the job said it finished."""
    traces = on_demand_traces(out)
    assert sorted(traces) == [first, second]
    for trigger_id, n in ((first, 4), (second, 3)):
        request = read_request(requests_dir(out) / f"{trigger_id}.json")
        by_rank = {rank: (a, b, path) for rank, a, b, path in traces[trigger_id]}
        assert sorted(by_rank) == [0, 1]
        for rank, (a, b, path) in by_rank.items():
            assert (a, b + 1) == (request.start, request.end) and b - a + 1 == n
            assert trace_steps(path) == set(range(request.start, request.end)), (rank, path)
        print(f"trigger {trigger_id}: steps {request.start}-{request.end - 1} on ranks {sorted(by_rank)}")
    assert len({p for v in traces.values() for *_, p in v}) == 4  # separate files
    assert log_text.count(f"{first + 1}.json is not valid JSON") == 2  # logged by both ranks, ignored
    assert log_text.count(f"on-demand request {first + 2} (steps 0-1) ignored: stale") == 2
    assert read_progress(out).state == "finished"
    assert [n for n, _ in list_requests(out)] == [f"{i}.json" for i in range(1, second + 1)]


def test_trigger_a_running_two_rank_torchrun_job(tmp_path, capsys):
    out = tmp_path / "job"
    proc = subprocess.Popen(
        torchrun_cmd(2, [JOB, str(out), str(STEPS)]), cwd=ROOT, env=clean_env(**{POLL_ENV: "0.25"}),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        first, second = drive_triggers(out, capsys)
        output, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, output[-4000:]
    assert output.count(f"DONE {STEPS} steps") == 2, output[-4000:]  # every step ran on both ranks
    check_triggered_job(out, first, second, output)
