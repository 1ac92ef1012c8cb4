"""The Chrome-trace reader (PyTorch profiler / Kineto JSON, ``.json`` and ``.json.gz``): one
trace's entry of the summary (schema.TraceAsRead), from one pass over its events (trace/split.py,
trace/collect.py) and every analyzer over them. Its line in the format registry: formats.py.
"""

from __future__ import annotations

from pathlib import Path

from bridge_plugins.analysis import second_core
from bridge_plugins.analysis.analyzers import gpu_breakdown, op_tables
from bridge_plugins.analysis.analyzers.all import TraceAnalyses, analyze
from bridge_plugins.analysis.analyzers.gemm_precision import gemm_precision
from bridge_plugins.analysis.analyzers.per_step import per_step
from bridge_plugins.analysis.analyzers.step_breakdown import gpu_role_spans
from bridge_plugins.analysis.analyzers.step_stats import step_stats
from bridge_plugins.analysis.figures import GpuBreakdown, OpRow
from bridge_plugins.analysis.heap import big_arrays_given_back
from bridge_plugins.analysis.parallel import trace_jobs
from bridge_plugins.analysis.schema import TraceAsRead
from bridge_plugins.analysis.trace.collect import Collected
from bridge_plugins.analysis.trace.gpu_events import joined
from bridge_plugins.analysis.trace.split import collect_trace
from bridge_plugins.jobdir.scan import rank_from_name


def _rank(header: dict, path: Path) -> tuple[int | None, str, int | None]:
    """The trace's rank, where it came from, and the world size (None where not known)."""
    info = header.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), (int, float)):
        world = info.get("world_size")
        return int(info["rank"]), "distributedInfo", int(world) if isinstance(world, (int, float)) else None
    rank = rank_from_name(path)
    return (rank, "file name", None) if rank is not None else (None, "none (numbered in input order)", None)


def summarize_trace(path: Path, *, timelines: bool = True) -> TraceAsRead:
    """One trace's entry (see the schema), with every op and kernel, and its step timelines where
    ``timelines``. Raises TraceError for an unreadable file."""
    d = collect_trace(path, trace_jobs())
    d.spill_rest()
    with big_arrays_given_back(d.gpu_count):
        return _analyzed(d, path, timelines)


def _analyzed(d: Collected, path: Path, timelines: bool = True) -> TraceAsRead:
    """The trace's entry from what its one pass collected."""
    rank, source, world = _rank(d.header, path)
    types = gpu_breakdown.kernel_types(d)
    keep = gpu_breakdown.kept_gpu_events(d)
    done: list[tuple] = []  # this process's join of the GPU events to their launches, once made

    def rest_of_analyses() -> tuple[TraceAnalyses, GpuBreakdown | None, list[OpRow] | None]:
        """Forked, the child joins them itself (it starts before this process has); else this
        process's join, which took the collector's columns (``joined``). The operator table too,
        where it comes to it before this process does (``ops_claim``)."""
        g, calls = done[0] if done else joined(d, keep, types)
        analyses, gpu = analyze(d, g, calls, timelines), gpu_breakdown.breakdown(g, d.gpu_count)
        return analyses, gpu, op_tables.cpu_ops(d) if ops_claim.take() else None

    # about half the work, in a child on a second core where the trace was read on several; the
    # operator table in whichever process is free first (job2's mix: the child; job128's: here)
    with second_core.Claim() as ops_claim, second_core.part(rest_of_analyses, d.read_on > 1) as rest:
        kernels = op_tables.gpu_kernels(d, keep, types)  # from the collector's columns, in their order: the same sums
        gpu_roles = gpu_role_spans(d, keep)  # every GPU event, as torch-tb-profiler counts them (step_breakdown)
        g, calls = joined(d, keep, types)  # takes those columns: one copy of the GPU events from here
        done.append((g, calls))
        steps = per_step(d, g, calls, gpu_roles)
        del gpu_roles  # its unions, as long as the GPU events, are not held by the analyses below
        cpu_ops = op_tables.cpu_ops(d) if ops_claim.take() else None
        analyses, gpu, its_ops = rest.result()
    if cpu_ops is None:  # the child's, or where it took the claim and failed, made here
        cpu_ops = its_ops if its_ops is not None else op_tables.cpu_ops(d)
    return TraceAsRead(
        file=str(path),
        rank=rank,
        rank_source=source,
        world_size=world,
        events=d.events,
        steps=step_stats(d.steps),
        per_step=steps,
        gpu=gpu,
        top_cpu_ops=cpu_ops,
        top_gpu_kernels=kernels,
        precision=gemm_precision(d.header, kernels),
        analyses=analyses,
    )
