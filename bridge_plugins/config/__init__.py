"""What the launch side and the job side share: ProfilingConfig (``profiling``), which features
exclude each other (``conflicts``), foreign profiling configs read into ours (``foreign``) and how
a value is written as a ``key=value`` override (``override_values``). Standard library only.
"""

from bridge_plugins.config.profiling import ProfilingConfig

__all__ = ["ProfilingConfig"]
