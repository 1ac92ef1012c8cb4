"""A GPU event's kernel type by its name (HolisticTraceAnalysis's classes): computation,
communication, memory or other. One rule, read by the collector, the GPU breakdown, the analyzers
and the nsys reader; what the split means: docs/analysis-schema.md ("The GPU time breakdown")."""

from __future__ import annotations

import re

COMMUNICATION, MEMORY, COMPUTATION, OTHER = "communication", "memory", "computation", "other"
_COMM_RE = re.compile(r"^nccl.*Kernel")
_MEMORY_RE = re.compile(r"^Memcpy|^Memset|^dma")
_NOT_COMPUTE_RE = re.compile(r"^nccl.*Kernel|.*Memcpy|^Memset|.*Sync")


def kernel_type(name: str) -> str:
    """HTA's kernel type of a GPU event name."""
    if _COMM_RE.match(name):
        return COMMUNICATION
    if _MEMORY_RE.match(name):
        return MEMORY
    return OTHER if _NOT_COMPUTE_RE.match(name) else COMPUTATION
