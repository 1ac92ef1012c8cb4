"""The typed figures a trace reader gives, below everything that reads them: the summary's
version-1 rows (TypedDicts: plain dicts at run time) and what only an Nsight Systems report has
(dataclasses). Readers (trace/, nsys/) import them from here, ``schema`` composes them into a trace's
entry; docs/analysis-schema.md describes each field."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict


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


@dataclass
class StatRow:
    """One row of an ``nsys stats`` summary (nanoseconds)."""

    name: str
    count: int
    total_ns: int
    avg_ns: float
    median_ns: float
    min_ns: int
    max_ns: int
    std_ns: float  # sample standard deviation; 0 for a single instance, as nsys prints it
    detail: str | None = None  # kernels: 'grid gx gy gz block bx by bz'; NVTX: the style


@dataclass
class NsysStats:
    """What ``nsys stats --report gpukernsum,cudaapisum,gpumemtimesum,nvtxsum`` prints, row for row."""

    gpu_kernels: list[StatRow]
    cuda_api: list[StatRow]
    memory_ops: list[StatRow]
    nvtx_ranges: list[StatRow]


@dataclass
class NsysReport:
    """What only an nsys report has: the nsys version that exported it, the ``nsys stats`` tables,
    and CUPTI's synchronization records by type ({type: {count, total_us}}; {} without the table)."""

    version: str | None
    export_schema_version: str | None
    stats: NsysStats
    cupti_synchronizations: dict[str, dict[str, float]]
