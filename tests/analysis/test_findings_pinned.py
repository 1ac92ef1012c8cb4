"""Every field of every finding pinned: kind, severity, title, time at stake, share, evidence,
advice, ranks and timeline, on the real GPU traces (../shared/fixtures/gpu-traces) and on cases
built from them that reach each rule's other branches (a CPU-only trace, a host busy elsewhere, a
step much slower than the others, a straggler without step times, blocking copies).

The expected findings are in ``findings_pinned.json`` beside this file. A change meant to change
a finding rewrites it (``python -m tests.analysis.test_findings_pinned``) in the same commit and
says why; ``git diff`` then shows exactly which words and figures moved."""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import sys
from pathlib import Path

import pytest

from bridge_plugins.analysis.analyzers.syncs import SyncSite
from bridge_plugins.analysis.findings import host_bound, memcpy, step_variance, straggler
from bridge_plugins.analysis.findings.model import Finding
from bridge_plugins.analysis.findings.run import rank_findings
from bridge_plugins.analysis.pipeline import summarize
from tests.analysis.gpu_traces import FIXTURES, J128

PINNED = Path(__file__).with_name("findings_pinned.json")


@functools.cache
def _summary(job: str) -> dict:
    return summarize(J128 if job == "job128" else [FIXTURES / "job2_rank0.json.gz"], top=None)


def _trace(job: str = "job128", **analyses) -> dict:  # type: ignore[no-untyped-def]
    t = copy.deepcopy(_summary(job).traces[0])
    t.analyses = dataclasses.replace(t.analyses, **analyses)
    return t


def _cpu_only() -> list[Finding]:
    steps = [dataclasses.replace(s, outside_ops_us=400_000.0 + 10 * i) for i, s in enumerate(_trace().analyses.steps)]
    t = _trace(steps=steps)
    t.gpu = None
    return host_bound.check(t)


def _host_busy_elsewhere() -> list[Finding]:
    ls = _trace("job2").analyses.launches
    return host_bound.check(_trace("job2", launches=dataclasses.replace(ls, shorter_on_gpu=ls.launches // 4)))


def _one_slow_step() -> list[Finding]:
    real = _trace().analyses.steps[0]
    # the slow step inside the window (its first and last step are not a finding alone)
    times = [(600_000.0, 500_000.0, 90_000.0), (1_900_000.0, 1_700_000.0, 150_000.0), (610_000.0, 505_000.0, 95_000.0)]
    steps = [
        dataclasses.replace(real, step=10 + i, duration_us=d, outside_ops_us=o, gpu_us=g, launches=600 + i, syncs=i)
        for i, (d, o, g) in enumerate(times)
    ]
    return step_variance.check(_trace(steps=steps))


def _stragglers_without_step_times() -> list[Finding]:
    summary = copy.deepcopy(_summary("job128"))
    for group in summary.cross_rank:
        group.medians.step_median_us = None
        for r in group.ranks:
            r.step_median_us = None
    return straggler.check(summary)


def _stragglers_by_step_time() -> list[Finding]:
    summary = copy.deepcopy(_summary("job128"))
    for group in summary.cross_rank:
        group.medians.computation_us = None
        for r in group.ranks:
            r.computation_us = None
            r.straggler, r.straggler_reasons = r.rank == 1, ["step time"]
    return straggler.check(summary)


def _blocking_copies() -> list[Finding]:
    syncs = _trace().analyses.syncs
    sites = [SyncSite(["forward", "aten::to", "cudaMemcpy"], 3, 120.0), SyncSite(["hipMemcpy"], 1, 30.0), *syncs.sites]
    by_name = {**syncs.by_name, "cudaMemcpy": 3, "hipMemcpy": 1}
    return memcpy.check(_trace(syncs=dataclasses.replace(syncs, by_name=by_name, sites=sites)))


CASES = {
    "job128": lambda: rank_findings(_summary("job128")),
    "job2": lambda: rank_findings(_summary("job2")),
    "host_bound on a CPU-only trace": _cpu_only,
    "host_bound, host busy elsewhere": _host_busy_elsewhere,
    "step_variance, one slow step": _one_slow_step,
    "straggler without step times": _stragglers_without_step_times,
    "straggler by step time": _stragglers_by_step_time,
    "memcpy, blocking copies": _blocking_copies,
}


def _as_json(found: list[Finding]) -> list[dict]:
    return json.loads(json.dumps([dataclasses.asdict(f) for f in found]))


@pytest.mark.parametrize("case", CASES)
def test_every_field_of_every_finding_is_as_pinned(case):
    expected = json.loads(PINNED.read_text())[case]
    assert expected, "every case finds something"
    assert _as_json(CASES[case]()) == expected


if __name__ == "__main__":  # rewrite the pinned findings (see the module's docstring)
    PINNED.write_text(json.dumps({name: _as_json(make()) for name, make in CASES.items()}, indent=1) + "\n")
    print(f"wrote {PINNED}", file=sys.stderr)
