"""The job side: runs inside every rank of the training job. Never imports nemo_run; torch is
imported only when a selected rank enters the controller (the backends import it).

``ProfilingController`` is resolved on first use, so the small job-side programs in
``runtime/entry`` (the nsys launch wrapper starts before the job) do not import the controller.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bridge_plugins.runtime.controller import ProfilingController

__all__ = ["ProfilingController"]


def __getattr__(name: str):
    if name == "ProfilingController":
        from bridge_plugins.runtime.controller import ProfilingController

        return ProfilingController
    raise AttributeError(f"module 'bridge_plugins.runtime' has no attribute {name!r}")
