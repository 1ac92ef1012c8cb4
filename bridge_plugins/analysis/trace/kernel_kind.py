"""HTA's kernel type of a GPU event's name (communication, memory, computation, other), said once:
the collector files names past its cap under it, and the GPU breakdown adds up time by it.
"""

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
