"""Helpers for the on-demand profiling tests: find the triggered traces, drive ``bridge-plugins
trigger`` against a running job, and check what the job left. Launcher-independent: the torchrun
test (test_on_demand_torchrun.py) and the 2-node Slurm test (test_slurm_on_demand.py) share them.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Sequence

from bridge_plugins.jobdir import names as artifact_names
from bridge_plugins.jobdir.on_demand import list_requests, progress_path, read_progress, read_request, requests_dir
from tests.support import ROOT, VENV_BIN, clean_env, trace_steps

TRIGGER_TIMEOUT_S = 60
"""Seconds the trigger CLI may take; it reads two small files and writes one."""


def on_demand_traces(out):
    """{trigger id (None: configured window): [(rank, first, last, path)]} of the PyTorch traces under out."""
    found = {}
    for p in sorted((out / artifact_names.TORCH_TRACE_DIR).glob("*" + artifact_names.TORCH_TRACE_SUFFIX)):
        name = artifact_names.parse(p)
        if name is None:  # a trace still being written (hidden temporary name)
            continue
        found.setdefault(name.trigger, []).append((name.rank, name.first_step, name.last_step, p))
    return found


def wait_for(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def trigger(out, *args) -> int:
    """Run the real ``bridge-plugins trigger`` CLI as a subprocess; the id of the request it wrote."""
    proc = subprocess.run(
        [str(VENV_BIN / "bridge-plugins"), "trigger", str(out), *args],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=TRIGGER_TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return int(re.search(r"^request (\d+): ranks", proc.stdout, re.M).group(1))


def ranks_traced(out, trigger_id, ranks: Sequence[int]):
    return lambda: sorted(r for r, *_ in on_demand_traces(out).get(trigger_id, [])) == sorted(ranks)


def drive_triggers(out, first_ranks: Sequence[int] = (0, 1), world: int = 2):
    """Trigger the job writing under ``out`` twice (4 steps on ``first_ranks``, then 3 steps on
    all ``world`` ranks), with a malformed and a stale request between; return the two trigger
    ids once every named rank wrote its trace."""
    assert wait_for(lambda: progress_path(out).exists() and read_progress(out).steps_per_s, 90), "no progress"
    first = trigger(out, "--steps", "4", "--ranks", ",".join(map(str, first_ranks)))
    assert wait_for(ranks_traced(out, first, first_ranks), 60), "trigger 1 produced no traces"
    (requests_dir(out) / f"{first + 1}.json").write_text("{not json")  # malformed
    stale = dict(id=first + 2, start=0, end=2, ranks=[], memory=False, created=time.time())
    (requests_dir(out) / f"{first + 2}.json").write_text(json.dumps(stale))
    second = trigger(out, "--steps", "3", "--ranks", "all")
    assert second == first + 3  # ids skip the two hand-written files: nothing is overwritten
    assert wait_for(ranks_traced(out, second, range(world)), 60), "trigger 2 produced no traces"
    return first, second


def check_triggered_job(out, first, second, log_text, first_ranks: Sequence[int] = (0, 1), world: int = 2):
    """Every named rank holds the same N consecutive steps per trigger, in a file of its own; the
    malformed and the stale request were logged by every rank; the job said it finished.
    Returns {trigger id: {rank: trace path}}."""
    traces = on_demand_traces(out)
    assert sorted(traces) == [first, second]
    found = {}
    for trigger_id, n, ranks in ((first, 4, first_ranks), (second, 3, range(world))):
        request = read_request(requests_dir(out) / f"{trigger_id}.json")
        by_rank = {rank: (a, b, path) for rank, a, b, path in traces[trigger_id]}
        assert sorted(by_rank) == sorted(ranks)
        for rank, (a, b, path) in by_rank.items():
            assert (a, b + 1) == (request.start, request.end) and b - a + 1 == n
            assert trace_steps(path) == set(range(request.start, request.end)), (rank, path)
        print(f"trigger {trigger_id}: steps {request.start}-{request.end - 1} on ranks {sorted(by_rank)}")
        found[trigger_id] = {rank: path for rank, (_a, _b, path) in by_rank.items()}
    assert len({p for v in traces.values() for *_, p in v}) == len(first_ranks) + world  # separate files
    assert log_text.count(f"{first + 1}.json is not valid JSON") == world  # logged by every rank, ignored
    assert log_text.count(f"on-demand request {first + 2} (steps 0-1) ignored: stale") == world
    assert read_progress(out).state == "finished"
    assert [n for n, _ in list_requests(out)] == [f"{i}.json" for i in range(1, second + 1)]
    return found
