"""A memory budget for reading one snapshot: a crafted pickle of a few megabytes can describe
gigabytes of objects, so loading and analysing it runs under a data-size limit (``RLIMIT_DATA``,
restored after). How large, and what it also limits: docs/reliability.md ("Memory snapshots from
anywhere").
"""

from __future__ import annotations

import contextlib
import resource
from collections.abc import Iterator

from bridge_plugins.config.errors import BridgePluginsError

MIN_BUDGET = 256 << 20
BYTES_PER_FILE_BYTE = 16


class OverBudget(BridgePluginsError, MemoryError):
    """Reading the snapshot needed more memory than its budget; the message says how much that was."""


def _data_bytes() -> int | None:
    """The process's data size as the kernel counts it against RLIMIT_DATA (VmData)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def budget_for(file_size: int) -> int:
    return max(MIN_BUDGET, BYTES_PER_FILE_BYTE * file_size)


@contextlib.contextmanager
def memory_budget(file_size: int) -> Iterator[int]:
    """Run the block with at most ``budget_for(file_size)`` more bytes of data; a MemoryError
    inside becomes OverBudget naming the budget. Yields the budget."""
    budget = budget_for(file_size)
    used = _data_bytes()
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    limit = None if used is None else used + budget
    if limit is not None and (soft == resource.RLIM_INFINITY or limit < soft):
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    else:
        limit = None
    over = False
    try:
        yield budget
    except MemoryError:
        over = True  # raised below, once the limit is lifted and the partial data is gone
    finally:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))
    if over:
        raise OverBudget(
            f"reading it needs more than {budget >> 20} MB of memory ({BYTES_PER_FILE_BYTE}x its size, at least "
            f"{MIN_BUDGET >> 20} MB), far more than a snapshot torch writes"
        )
