"""The summary's types: what ``summarize`` returns and every renderer (terminal, JSON, HTML) reads.

The version-1 parts are TypedDicts (plain dicts at run time, checked by the type checker); the
analyses and findings are dataclasses (analyzers/, findings/). docs/analysis-schema.md describes them.
"""

from __future__ import annotations

from typing import TypedDict

from bridge_plugins.analysis.analyzers.all import TraceAnalyses
from bridge_plugins.analysis.findings.model import Finding
from bridge_plugins.analysis.nsys.summary import NsysReport


class StepStats(TypedDict):
    captured: list[int]
    count: int
    min_us: float | None
    median_us: float | None
    max_us: float | None
    note: str | None


class GpuBreakdown(TypedDict):
    span_us: float
    computation_us: float
    communication_us: float
    memory_us: float
    idle_us: float
    communication_total_us: float
    gpu_events: int
    gpu_events_dropped: int


class OpRow(TypedDict):
    name: str
    self_us: float
    total_us: float
    calls: int


class KernelRow(TypedDict):
    name: str
    type: str
    total_us: float
    calls: int


class GemmPrecision(TypedDict):
    """GEMM/convolution kernel time by precision, and whether the GPU has Tensor Cores (trace/precision.py)."""

    device: str | None  # the GPU's name from deviceProperties
    compute_capability: float | None  # e.g. 8.0; None without deviceProperties
    tensor_cores: bool  # an NVIDIA GPU of compute capability >= 7.0
    fp32_us: float  # GEMM/convolution kernel time in fp32 (TF32 included)
    half_us: float  # in fp16, bf16 or lower
    fp32_kernels: list[KernelRow]  # the fp32 GEMM/convolution kernels, most time first (5 at most)


class _OtherFormat(TypedDict, total=False):
    """The keys only a trace of another format than a Chrome trace has (analysis.formats)."""

    format: str  # the format's name: 'nsys-sqlite'
    nsys: NsysReport  # an Nsight Systems report's own tables (docs/nsys-reports.md)


class _TraceFigures(_OtherFormat):
    """A trace's figures, every field but ``rank``."""

    file: str
    rank_source: str
    world_size: int | None
    events: int
    steps: StepStats
    gpu: GpuBreakdown | None
    top_cpu_ops: list[OpRow]
    top_gpu_kernels: list[KernelRow]
    analyses: TraceAnalyses
    per_step: list[dict]  # per ProfilerStep: step time and GPU idle share (the many-ranks heatmaps)
    precision: GemmPrecision | None  # GEMM/convolution kernel time by precision (trace/precision.py)


class TraceAsRead(_TraceFigures):
    """One trace as its file gives it: ``rank`` is None where neither the trace nor its name has one."""

    rank: int | None


class TraceSummary(_TraceFigures):
    """One trace of a Summary: numbered, so ``rank`` is always known (summarize gives a trace with
    no rank the lowest free number). The findings and every renderer read this type."""

    rank: int


class Problem(TypedDict):
    file: str
    error: str


class Summary(TypedDict):
    schema: str
    schema_version: int
    inputs: list[str]
    findings: list[Finding]
    traces: list[TraceSummary]
    cross_rank: list[dict]  # stragglers.cross_rank
    memory: dict | None  # memory.snapshot.memory_entry, merged
    problems: list[dict[str, str]]
