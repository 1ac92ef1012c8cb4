"""What the launch side and the job side share: ProfilingConfig (``profiling``), which features
exclude each other (``conflicts``), foreign profiling configs read into ours (``foreign``) and how
a value is written as a ``key=value`` override (``override_values``). Standard library only.
``ProfilingConfig`` is imported on first use: a reader that needs only ``config.errors`` (the
``bridge-plugins`` command) does not import dataclasses, logging and the config's rules for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bridge_plugins.config.profiling import ProfilingConfig

__all__ = ["ProfilingConfig"]


def __getattr__(name: str) -> type:
    if name != "ProfilingConfig":
        raise AttributeError(f"module 'bridge_plugins.config' has no attribute {name!r}")
    from bridge_plugins.config.profiling import ProfilingConfig

    globals()[name] = ProfilingConfig
    return ProfilingConfig
