"""The typed figures of one trace, below everything that builds or reads them: the summary's
version-1 parts (step times, GPU breakdown, operator and kernel rows, GEMM precision) and what only
an Nsight Systems report has. All dataclasses built by keyword; ``jsonable`` writes each field for
field, in this order. The figure builders (analyzers/, nsys/) import them from here, ``schema``
composes them into a trace's entry; docs/analysis-schema.md describes each field."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class StepStats:
    """Step times from the ProfilerStep spans (analyzers/step_stats.py); ``note`` says why there are none."""

    captured: list[int]
    count: int
    min_us: float | None
    median_us: float | None
    max_us: float | None
    note: str | None


@dataclass(frozen=True, kw_only=True)
class GpuParts:
    """GPU time by part, in microseconds: a rank's (GpuBreakdown), or a run's mean over its traces
    and the change in it (run_compare)."""

    span_us: float
    computation_us: float
    communication_us: float
    memory_us: float
    idle_us: float
    communication_total_us: float


@dataclass(frozen=True, kw_only=True)
class GpuBreakdown(GpuParts):
    """Where a rank's GPU time went (analyzers/gpu_breakdown.py), in microseconds, and how many GPU
    events it counted."""

    gpu_events: int
    gpu_events_dropped: int


@dataclass(slots=True, kw_only=True)
class OpRow:
    """A CPU operator's self and total time and calls. Slots, not frozen: one is built per distinct
    name (10^5 in a large trace), and a frozen one takes three times as long to build."""

    name: str
    self_us: float
    total_us: float
    calls: int


@dataclass(slots=True, kw_only=True)
class KernelRow:
    """A GPU kernel's (or copy's) type, total time and calls; slots, not frozen, as OpRow."""

    name: str
    type: str
    total_us: float
    calls: int


@dataclass(frozen=True, kw_only=True)
class StepBreakdown:
    """Where one step's time went, torch-tb-profiler's split (analyzers/step_breakdown.py); the parts
    sum to ``step_us``. Fields in the JSON's order: ``other_us`` comes second."""

    step_us: float  # the span the parts cover
    other_us: float
    kernel_us: float
    memcpy_us: float
    memset_us: float
    communication_us: float
    runtime_us: float
    dataloader_us: float
    cpu_exec_us: float


@dataclass(frozen=True, kw_only=True)
class StepRow:
    """One captured step (analyzers/per_step.py): its time, how idle the GPU was for it (None: it
    launched nothing), where its time went (None in an nsys report) and how long it waited on input."""

    step: int
    time_us: float
    gpu_idle_share: float | None
    breakdown: StepBreakdown | None
    input_wait_us: float
    input_span: str | None  # the input span that waited longest in the step


@dataclass(frozen=True, kw_only=True)
class GemmPrecision:
    """GEMM/convolution kernel time by precision, and whether the GPU has Tensor Cores (analyzers/gemm_precision.py)."""

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
