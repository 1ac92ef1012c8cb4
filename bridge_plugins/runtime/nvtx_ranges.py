"""NVTX range push/pop for the nsys backend, on GPU and CPU alike.

NVIDIA's ``nvtx`` package (PyPI) emits NVTX without CUDA, so a CPU job's steps show in nsys too;
torch's CPU wheels have no NVTX of their own. ``nvtx`` 0.2.12 and newer emit ranges that Nsight
Systems 2022.4 does not record (measured: only domain create/destroy events reach the report),
hence the ``nvtx<0.2.12`` pin in pyproject.toml; newer nsys versions record both. Without the
package, CUDA builds of torch (``torch.cuda.nvtx``) are used.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class NvtxRanges:
    """Where NVTX ranges come from here, and how to push and pop one (None: no NVTX here)."""

    source: str | None
    """'nvtx' (the PyPI package), 'torch.cuda.nvtx', or None."""
    push: Callable[[str], object]
    pop: Callable[[], object]

    @property
    def available(self) -> bool:
        return self.source is not None


def _nothing(*_args: object) -> None:
    return None


def find_nvtx() -> NvtxRanges:
    """The first NVTX emitter that works here: the ``nvtx`` package, then torch's CUDA NVTX."""
    try:
        import nvtx

        return NvtxRanges("nvtx", push=nvtx.push_range, pop=nvtx.pop_range)
    except ImportError:
        pass
    try:
        import torch

        torch.cuda.nvtx.range_push("bridge_plugins.probe")
        torch.cuda.nvtx.range_pop()
        return NvtxRanges("torch.cuda.nvtx", push=torch.cuda.nvtx.range_push, pop=torch.cuda.nvtx.range_pop)
    except Exception:
        return NvtxRanges(None, push=_nothing, pop=_nothing)
