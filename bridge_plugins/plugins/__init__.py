"""Launch side: NeMo Run plugins that write a ProfilingConfig into a task and set up the executor.

This package imports nemo_run; the job side (``bridge_plugins.runtime``) never imports it, and
nothing here imports the runtime. Each plugin is a small keyword-only dataclass with one ``setup``;
shared mechanics are plain functions beside them (one line per module: docs/architecture.md).
"""

from bridge_plugins.plugins.edits import NsysNotFoundError, NsysNotFoundWarning, ProfilingPluginWarning
from bridge_plugins.plugins.fault_tolerance import FaultTolerancePlugin
from bridge_plugins.plugins.nsys import NsysPlugin
from bridge_plugins.plugins.pytorch import PyTorchProfilerPlugin
from bridge_plugins.plugins.script_args import (
    FaultTolerancePluginScriptArgs,
    NsysPluginScriptArgs,
    PyTorchProfilerPluginScriptArgs,
    _default_fault_tolerance_converter,
    _default_nsys_converter,
    _default_pytorch_profiler_converter,
)
from bridge_plugins.plugins.script_overrides import default_script_args_converter

# Megatron Bridge's names (megatron.bridge.recipes.run_plugins), so that its users change one import line.
__all__ = [
    "NsysPlugin",
    "PyTorchProfilerPlugin",
    "FaultTolerancePlugin",
    "ProfilingPluginWarning",
    "NsysNotFoundError",
    "NsysNotFoundWarning",
    "default_script_args_converter",
    "NsysPluginScriptArgs",
    "PyTorchProfilerPluginScriptArgs",
    "FaultTolerancePluginScriptArgs",
    "_default_nsys_converter",
    "_default_pytorch_profiler_converter",
    "_default_fault_tolerance_converter",
]
