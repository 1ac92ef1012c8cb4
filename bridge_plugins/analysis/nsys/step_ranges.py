"""Training steps in an export, from NVTX ranges, and what happened in each one.

A profiled step is an NVTX range named ``ProfilerStep#<N>`` (what the job side writes, as
torch.profiler names its step spans; torch's ``emit_nvtx`` may append ``, seq = ...``) or
``step <N>`` (this project's earlier name). The first range of a step number counts. Per step: the
CUDA launch calls that start in it and the GPU time of what they launched (launch_links.py's table),
and the synchronizing CUDA calls (analyzers.syncs.SYNC_CALLS) that start in it.
"""

from __future__ import annotations

import re
from collections import Counter

from bridge_plugins.analysis.analyzers.step_detail import StepDetail
from bridge_plugins.analysis.analyzers.syncs import SYNC_CALLS, SyncPoints, SyncSite
from bridge_plugins.analysis.nsys.db import NVTX, SYNC, Export
from bridge_plugins.analysis.nsys.launch_links import calls_once, runtime_ids
from bridge_plugins.analysis.nsys.stats_reports import NVTX_RANGES, api_name, nvtx_name_sql

STEP_NAME = re.compile(r"^(?:ProfilerStep#|step )(\d+)(?:,.*)?$")
STEP_GLOBS = ("ProfilerStep#[0-9]*", "step [0-9]*")
NO_NVTX_STEPS = (
    "no NVTX step ranges (ProfilerStep#<N> or step <N>): no step times; the other figures cover the whole report"
)
# CUpti_ActivitySynchronizationType
SYNC_TYPES = {1: "event synchronize", 2: "stream wait event", 3: "stream synchronize", 4: "context synchronize"}
# the step a time falls in: the last step to start at or before it, if it has not ended (one index lookup)
STEP_OF = (
    "(SELECT step FROM (SELECT s.step, s.end FROM temp.steps s WHERE s.start <= {t} ORDER BY s.start DESC LIMIT 1) "
    "WHERE {t} < end)"
)


def nvtx_steps(export: Export) -> dict[int, tuple[int, int]]:
    """Step number -> (start, end) in ns, from the NVTX ranges; kept in ``temp.steps`` for the per-step queries."""
    steps: dict[int, tuple[int, int]] = {}
    if export.has(NVTX, "eventType", "text", "end"):
        name = nvtx_name_sql(export)
        globs = " OR ".join(f"nm GLOB '{g}'" for g in STEP_GLOBS)
        types = ", ".join(map(str, NVTX_RANGES))
        sql = f"""SELECT nm, start, end FROM (SELECT {name} AS nm, ne.start, ne.end FROM {NVTX} ne
            WHERE ne.eventType IN ({types}) AND ne.end IS NOT NULL) WHERE {globs} ORDER BY start"""
        for nm, start, end in export.conn.execute(sql):
            m = STEP_NAME.match(nm)
            if m and int(m[1]) not in steps:
                steps[int(m[1])] = (start, end)
    export.conn.execute("CREATE TEMP TABLE IF NOT EXISTS steps(step INTEGER, start INTEGER, end INTEGER)")
    export.conn.execute("DELETE FROM temp.steps")
    export.conn.executemany("INSERT INTO temp.steps VALUES (?, ?, ?)", ((n, s, e) for n, (s, e) in steps.items()))
    export.conn.execute("CREATE INDEX IF NOT EXISTS temp.steps_start ON steps(start)")
    return steps


def step_details(export: Export, steps: dict[int, tuple[int, int]], syncs: dict[int, int]) -> list[StepDetail]:
    """Per step: duration, launches and their GPU time (from ``temp.launch``); no operators in nsys, so
    ``outside_ops_us`` is None."""
    per: dict[int, tuple[int, float]] = {}
    if steps:
        sql = f"SELECT step, count(*), total(gpu) FROM (SELECT {STEP_OF.format(t='l.t')} AS step, gpu FROM temp.launch l) WHERE step IS NOT NULL GROUP BY step"
        per = {n: (k, gpu) for n, k, gpu in export.conn.execute(sql)}
    return [
        StepDetail(
            n, s / 1e3, (e - s) / 1e3, None, per.get(n, (0, 0.0))[0], per.get(n, (0, 0.0))[1] / 1e3, syncs.get(n, 0)
        )
        for n, (s, e) in sorted(steps.items())
    ]


def sync_points(export: Export, steps: dict[int, tuple[int, int]]) -> SyncPoints:
    """analyzers.syncs.SyncPoints from the synchronizing CUDA calls; a call recorded twice (one
    correlationId in one process) counts once. Sites are by function name (no Python stacks in nsys)."""
    ids = runtime_ids(export, SYNC_CALLS)
    if not ids:
        return SyncPoints(0, 0.0, {}, dict.fromkeys(steps, 0), [], "no synchronizing CUDA calls in this report")
    calls = calls_once(export, f"nameId IN ({', '.join(map(str, ids))})")
    names = export.names(ids)
    by_name: Counter[str] = Counter()
    total: dict[str, float] = {}
    for name_id, n, dur in export.conn.execute(f"SELECT nameId, count(*), total(dur) FROM ({calls}) GROUP BY nameId"):
        name = api_name(names[name_id])
        by_name[name] += n
        total[name] = total.get(name, 0.0) + dur / 1e3
    per_step = dict.fromkeys(steps, 0)
    if steps:
        sql = f"SELECT step, count(*) FROM (SELECT {STEP_OF.format(t='c.t')} AS step FROM ({calls}) c) WHERE step IS NOT NULL GROUP BY step"
        per_step.update(dict(export.conn.execute(sql)))
    sites = sorted((SyncSite([n], k, total[n]) for n, k in by_name.items()), key=lambda s: (-s.count, s.stack))
    return SyncPoints(sum(by_name.values()), sum(total.values()), dict(by_name), per_step, sites)


def cupti_synchronizations(export: Export) -> dict:
    """The ``CUPTI_ACTIVITY_KIND_SYNCHRONIZATION`` rows by type: {type: {count, total_us}}; {} without the table."""
    if not export.has(SYNC, "syncType"):
        return {}
    sql = f"SELECT syncType, count(*), total(end - start) FROM {SYNC} GROUP BY syncType"
    return {SYNC_TYPES.get(t, f"type {t}"): {"count": n, "total_us": ns / 1e3} for t, n, ns in export.conn.execute(sql)}
