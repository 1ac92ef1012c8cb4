"""Launch side: NeMo Run plugins that write a ProfilingConfig into a task and set up the executor.

This package imports nemo_run; the job side (``bridge_plugins.runtime``) never imports it, and
nothing here imports the runtime. Each plugin is a small keyword-only dataclass with one ``setup``;
shared mechanics are plain functions beside them (one line per module: docs/architecture.md).
"""

from bridge_plugins.plugins.edits import NsysNotFoundError, ProfilingPluginWarning
from bridge_plugins.plugins.fault_tolerance import FaultTolerancePlugin
from bridge_plugins.plugins.nsys import NsysPlugin
from bridge_plugins.plugins.pytorch import PyTorchProfilerPlugin
from bridge_plugins.plugins.script_overrides import default_script_args_converter

__all__ = [
    "NsysPlugin",
    "PyTorchProfilerPlugin",
    "FaultTolerancePlugin",
    "ProfilingPluginWarning",
    "NsysNotFoundError",
    "default_script_args_converter",
]
