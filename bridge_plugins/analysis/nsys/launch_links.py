"""Kernel launches in an export: each CUDA launch call joined to the GPU work it started.

``correlationId`` links a call in ``CUPTI_ACTIVITY_KIND_RUNTIME`` to its kernel, copy or memset
(within one process: the process id is bits 24-47 of ``globalTid``/``globalPid``). The pairs go
to one temporary table (on disk: SQLite's temp store), from which the launch statistics
(analyzers.launches' figures) and the per-step launch counts and GPU time are aggregated.
"""

from __future__ import annotations

from bridge_plugins.analysis.analyzers.distribution import Distribution
from bridge_plugins.analysis.analyzers.launches import _CALLS, LAUNCH_DELAY_CUTOFF_US, RUNTIME_CUTOFF_US, LaunchStats
from bridge_plugins.analysis.nsys.db import KERNEL, MEMCPY, MEMSET, RUNTIME, Export
from bridge_plugins.analysis.nsys.stats_reports import api_name

PID_MASK = "0x0000FFFFFF000000"
QUANTILES = (0.25, 0.5, 0.75, 0.95)
NO_LAUNCHES = "no GPU work matched a CUDA launch call (no CUPTI_ACTIVITY_KIND_RUNTIME rows with a correlationId?)"


def runtime_ids(export: Export, names: frozenset[str]) -> list[int]:
    """The ``nameId``s of the CUDA runtime functions called ``names`` (version suffix ignored)."""
    if not export.has(RUNTIME, "nameId"):
        return []
    ids = [r[0] for r in export.conn.execute(f"SELECT DISTINCT nameId FROM {RUNTIME}")]
    return [i for i, n in export.names(ids).items() if api_name(n) in names]


def calls_once(export: Export, where: str = "1") -> str:
    """A SELECT of ``t, dur, nameId`` (ns) over the runtime calls matching ``where``, each call once:
    rows that share a correlationId in one process (nsys 2022.2 records ``cudaMemcpy`` and
    ``cudaMemcpy_v3020`` for one call) count as the innermost, the one that starts last."""
    one = "rowid"
    if export.has(RUNTIME, "correlationId", "globalTid"):
        one = f"CASE WHEN coalesce(correlationId, 0) = 0 THEN -rowid ELSE correlationId END, globalTid & {PID_MASK}"
    return f"SELECT max(start) AS t, end - start AS dur, nameId FROM {RUNTIME} WHERE {where} GROUP BY {one}"


def build_launch_table(export: Export) -> int:
    """Fill ``temp.launch(t, cpu, gpu, delay)`` (ns): one row per GPU activity launched by a launch
    call (analyzers.launches' list), ``t`` the call's start. Returns the row count."""
    conn = export.conn
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS launch(t INTEGER, cpu INTEGER, gpu INTEGER, delay INTEGER)")
    for column in ("cpu", "gpu", "delay"):
        conn.execute(f"DROP INDEX IF EXISTS temp.launch_{column}")
    conn.execute("DELETE FROM temp.launch")
    ids = runtime_ids(export, _CALLS | {"cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx"})
    if not ids or not export.has(RUNTIME, "correlationId"):
        return 0
    for table in (KERNEL, MEMCPY, MEMSET):
        if not export.has(table, "correlationId"):
            continue
        same_process = ""  # per table: one may have globalPid and another not
        if export.has(table, "globalPid") and export.has(RUNTIME, "globalTid"):
            same_process = f"AND (r.globalTid & {PID_MASK}) = (g.globalPid & {PID_MASK})"
        conn.execute(
            # a call recorded twice (nsys 2022.2 exports cudaLaunchKernel and cudaLaunchKernel_v7000 with one
            # correlationId) launches its work once: the innermost call, the one that starts last, is kept
            f"""INSERT INTO temp.launch SELECT t, cpu, gpu, delay FROM (
            SELECT max(r.start) AS t, r.end - r.start AS cpu, g.end - g.start AS gpu, max(g.start - r.end, 0) AS delay
            FROM {table} g JOIN {RUNTIME} r ON r.correlationId = g.correlationId {same_process}
            WHERE r.nameId IN ({", ".join(map(str, ids))}) GROUP BY g.rowid)"""
        )
    return int(conn.execute("SELECT count(*) FROM temp.launch").fetchone()[0])


def distribution(export: Export, column: str) -> Distribution:
    """analyzers.distribution.describe of a column of ``temp.launch`` (us), with numpy's linear quantiles:
    SQLite aggregates it and indexes it once, and the quantiles' rows are read through the index."""
    conn = export.conn
    n, mean, lo, hi = conn.execute(
        f"SELECT count(*), avg({column}), min({column}), max({column}) FROM temp.launch"
    ).fetchone()
    if not n:
        return Distribution(count=0)
    sq = conn.execute(f"SELECT total(({column} - ?) * ({column} - ?)) FROM temp.launch", (mean, mean)).fetchone()[0]
    conn.execute(f"CREATE INDEX IF NOT EXISTS temp.launch_{column} ON launch({column})")

    def quantile(q: float) -> float:
        p = q * (n - 1)
        i = int(p)
        sql = f"SELECT {column} FROM temp.launch ORDER BY {column} LIMIT 2 OFFSET ?"  # the value and the next
        pair = [float(r[0]) for r in conn.execute(sql, (i,))]
        return (pair[0] + (p - i) * (pair[1] - pair[0]) if len(pair) == 2 else pair[0]) / 1e3

    q = [quantile(x) for x in QUANTILES]
    std = (sq / (n - 1)) ** 0.5 / 1e3 if n > 1 else None
    return Distribution(n, mean / 1e3, std, lo / 1e3, q[0], q[1], q[2], q[3], hi / 1e3)


def launch_stats(export: Export) -> LaunchStats | None:
    """analyzers.launches.LaunchStats from ``temp.launch`` (build_launch_table first); None without launches."""
    n = int(export.conn.execute("SELECT count(*) FROM temp.launch").fetchone()[0])
    if n == 0:
        return None
    shorter, overhead, slow, delayed = export.conn.execute(
        "SELECT total(gpu < cpu), total(max(cpu - gpu, 0)), total(cpu > ?), total(delay > ?) FROM temp.launch",
        (RUNTIME_CUTOFF_US * 1e3, LAUNCH_DELAY_CUTOFF_US * 1e3),
    ).fetchone()
    return LaunchStats(
        launches=n,
        cpu_duration_us=distribution(export, "cpu"),
        gpu_duration_us=distribution(export, "gpu"),
        launch_delay_us=distribution(export, "delay"),
        shorter_on_gpu=int(shorter),
        launch_overhead_us=overhead / 1e3,
        slow_launch_calls=int(slow),
        delayed_launches=int(delayed),
    )
