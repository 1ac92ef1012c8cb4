"""The summary's types: what ``summarize`` returns and every renderer (terminal, JSON, HTML) reads.

Every type is a dataclass built by keyword, whose fields are the version-1 JSON's keys in its order
(``jsonable`` writes them): the Summary, a trace's entry, a skipped file (``Problem``), the
cross-rank groups and rows, and every figure in them: the version-1 parts (figures.py), the analyses
(analyzers/) and the findings (``Finding``, here: the rules in findings/ build it). A trace's
``format`` and ``nsys`` are left out of the JSON where None (a Chrome trace has neither).
docs/analysis-schema.md describes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bridge_plugins.analysis.errors import Problem
from bridge_plugins.analysis.figures import (
    GemmPrecision,
    GpuBreakdown,
    KernelRow,
    NsysReport,
    OpRow,
    StepBreakdown,
    StepRow,
    StepStats,
)
from bridge_plugins.analysis.jsonable import OMIT_WHEN_NONE

if TYPE_CHECKING:  # types only: the Summary's types load no analyzer (numpy) and no snapshot reader; no cycle
    from bridge_plugins.analysis.analyzers.all import TraceAnalyses  # (tests/test_import_graph.py)
    from bridge_plugins.analysis.memory.results import MemoryEntry

__all__ = [
    "CrossRankGroup",
    "CrossRankRow",
    "Finding",
    "GemmPrecision",
    "GpuBreakdown",
    "KernelRow",
    "NsysReport",
    "OpRow",
    "StepStats",
]
__all__ += ["StepBreakdown", "StepRow"]
__all__ += ["Diagnosis", "Problem", "RankFigures", "Summary", "TraceAsRead", "TraceSummary"]


@dataclass
class Finding:
    """A finding: a rule of findings/ over a trace's figures (findings.model builds it)."""

    kind: str  # a stable name: docs/diagnose.md
    severity: str  # high | medium | low, from share_of_step
    title: str  # one line, in the user's terms
    time_us_per_step: float  # estimate of the step time at stake
    share_of_step: float | None  # that time over the median step (0..1); None without step times
    evidence: dict  # the numbers behind it
    advice: list[str]  # what to try, first the most likely to help
    ranks: list[int] = field(default_factory=list)
    timeline: str | None = None  # id of the report's timeline this is about


@dataclass(kw_only=True)
class RankFigures:
    """The figures compared across ranks (cross_rank.py): one rank's, or a group's medians of them."""

    step_median_us: float | None
    computation_us: float | None
    communication_total_us: float | None


@dataclass(kw_only=True)
class CrossRankRow:
    """One rank of a cross-rank group (cross_rank.py): its medians, how far above the group's
    median each is (a fraction; None where either is missing), and its verdict."""

    rank: int
    file: str
    step_median_us: float | None
    computation_us: float | None
    communication_total_us: float | None
    step_vs_median: float | None
    computation_vs_median: float | None
    communication_vs_median: float | None
    straggler: bool
    straggler_reasons: list[str]  # 'step', 'computation'; [] unless a straggler
    waiting: bool  # waits on a straggler: communication at or above the median


@dataclass(kw_only=True)
class CrossRankGroup:
    """The traces that captured the same steps, compared (cross_rank.py)."""

    steps: list[int]
    medians: RankFigures  # each figure's median across the ranks
    ranks: list[CrossRankRow]
    stragglers: list[int]
    waiting: list[int]


@dataclass(kw_only=True)
class TraceAsRead:
    """One trace as its file gives it: ``rank`` is None where neither the trace nor its name has one.
    ``format`` and ``nsys`` only a trace of another format than a Chrome trace has (analysis.formats)."""

    file: str
    rank: int | None
    rank_source: str
    world_size: int | None
    events: int
    steps: StepStats
    per_step: list[StepRow]  # per ProfilerStep: step time, GPU idle share (the many-ranks heatmaps), split
    gpu: GpuBreakdown | None
    top_cpu_ops: list[OpRow]
    top_gpu_kernels: list[KernelRow]
    precision: GemmPrecision | None  # GEMM/convolution kernel time by precision (analyzers/gemm_precision.py)
    analyses: TraceAnalyses
    format: str | None = field(default=None, metadata={OMIT_WHEN_NONE: True})  # the format's name: 'nsys-sqlite'
    nsys: NsysReport | None = field(default=None, metadata={OMIT_WHEN_NONE: True})  # docs/nsys-reports.md


@dataclass(kw_only=True)
class TraceSummary(TraceAsRead):
    """One trace of a Summary: numbered, so ``rank`` is always known (summarize gives a trace with
    no rank the lowest free number). The findings and every renderer read this type."""

    rank: int


@dataclass(kw_only=True)
class Summary:
    """What ``summarize`` returns: the version-1 JSON's top level, field for field."""

    schema: str
    schema_version: int
    inputs: list[str]
    findings: list[Finding]
    traces: list[TraceSummary]
    cross_rank: list[CrossRankGroup]  # cross_rank.py
    memory: MemoryEntry | None  # the snapshots given and their figures (memory.results)
    problems: list[Problem]


@dataclass(kw_only=True)
class Diagnosis:
    """What ``diagnose`` returns: the ranked findings, the files that could not be read, and how
    many traces were read (findings need one)."""

    findings: list[Finding]
    problems: list[Problem]
    traces_read: int
