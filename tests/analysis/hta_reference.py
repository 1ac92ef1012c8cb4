"""HTA's answer to each analyzer question for one job directory, as plain rows (test-only).

Every HTA call is made the same way our analyzers are defined (``include_last_profiler_step=True``)
and recorded as either its rows or the exception it raised, so a comparison can say where HTA
does not answer. Used by test_hta_analyzers and hta_table (the side-by-side table for the notes).
"""

from __future__ import annotations

import logging
import os
import warnings
from contextlib import contextmanager

from hta.trace_analysis import TraceAnalysis

logging.getLogger("hta").setLevel(logging.ERROR)


class Raised:
    def __init__(self, e: BaseException):
        self.error = f"{type(e).__name__}: {str(e)[:200]}"

    def __repr__(self) -> str:
        return f"HTA raised {self.error}"


def _try(f):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return f()
    except Exception as e:  # HTA's own failure is data here
        return Raised(e)


def _launch(df):
    return {
        "count": len(df),
        "cpu_median": float(df["cpu_duration"].median()),
        "gpu_median": float(df["gpu_duration"].median()),
        "delay_median": float(df["launch_delay"].median()),
        "delay_mean": float(df["launch_delay"].mean()),
        "shorter_on_gpu": int((df["gpu_duration"] < df["cpu_duration"]).sum()),
        "slow_launch_calls": int((df["cpu_duration"] > 50).sum()),
        "delayed_launches": int((df["launch_delay"] > 100).sum()),
    }


def _described(df, col):
    """{(rank, key): {count, mean, max}} of a groupby(...).describe() frame."""
    out = {}
    for (rank, key), row in df.iterrows():
        out[(int(rank), key)] = {s: float(row[(col, s)]) for s in ("count", "mean", "max")}
    return out


@contextmanager
def _env(name: str, value: str | None):
    old = os.environ.get(name)
    if value is not None:
        os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def reference(trace_dir: str, round_ns: bool = True) -> dict:
    """HTA's answers. ``round_ns=False`` turns off HTA's rounding of fractional timestamps (ts up,
    end down), which moves threshold counts (e.g. GPU shorter than CPU) on ns-resolution traces."""
    with _env("HTA_DISABLE_NS_ROUNDING", None if round_ns else "1"):
        ta = TraceAnalysis(trace_dir=trace_dir, include_last_profiler_step=True)
    ranks = sorted(int(r) for r in ta.t.traces)
    out: dict = {"ranks": ranks}
    out["temporal"] = _try(lambda: ta.get_temporal_breakdown(visualize=False))
    out["overlap"] = _try(lambda: ta.get_comm_comp_overlap(visualize=False))
    out["kernels"] = _try(lambda: ta.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True))
    for r in ranks:
        out[("idle", r)] = _try(lambda r=r: ta.get_idle_time_breakdown(ranks=[r], visualize=False)[0])
        out[("launch", r)] = _try(lambda r=r: _launch(ta.get_cuda_kernel_launch_stats(ranks=[r], visualize=False)[r]))
        out[("queue", r)] = _try(lambda r=r: _described(ta.get_queue_length_summary(ranks=[r]), "queue_length"))
        out[("bandwidth", r)] = _try(lambda r=r: _described(ta.get_memory_bw_summary(ranks=[r]), "memory_bw_gbps"))
    return out
