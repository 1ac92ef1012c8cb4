"""What a trace collector gathered, made comparable with ``==``: how the chunk, split and hostile-trace
tests check that two ways of reading the same events gather the same data."""

from __future__ import annotations

import dataclasses
from array import array

from bridge_plugins.analysis.trace import collect, split
from bridge_plugins.analysis.trace.collect import Collector


def state(c: Collector) -> tuple:
    """Everything the collector gathered, comparable with == (NaN pids as text: NaN != NaN)."""
    d = c.data
    columns = [
        a.tolist()
        for a in (*(getattr(d, n) for n in ("gpu_ts", "gpu_dur", "gpu_name", "gpu_corr", "gpu_stream", "gpu_cat")),)
        + (d.mem_index, d.mem_bytes, d.mem_bw)
        + d._cpu_tail()
    ]
    tables = [[(repr(k), [x.tolist() for x in t[k]]) for k in t] for t in (d.ops, d.py, d.annotations)]
    return (repr(columns), d.names, repr(d.threads), d.steps, d.step_ts, d.events, tables, d.profiler_step_names)


def dump(d: collect.Collected) -> dict:
    """Everything ``d`` holds of its trace, comparable with == (not ``read_on``: how it was read)."""
    tables = split.TABLES  # per-thread columns, read whole (spilled parts included)
    per_thread = {t: {k: [a.tolist() for a in cols] for k, cols in getattr(d, t).items()} for t in tables}
    cpu = [a.tolist() for a in d.cpu_calls()]
    plain = {  # arrays as bytes: NaN (a memcpy without bandwidth) equals itself there
        f.name: (v.tobytes() if isinstance(v, array) else v)
        for f in dataclasses.fields(d)
        if "spilled" not in f.name and f.name not in tables and f.name != "read_on"
        for v in [getattr(d, f.name)]
    }
    return {**plain, **per_thread, "cpu": cpu}
