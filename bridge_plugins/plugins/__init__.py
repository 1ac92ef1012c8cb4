"""Launch side: NeMo Run plugins that write a ProfilingConfig into a task and set up the executor.

This package imports nemo_run; the job side (``bridge_plugins.runtime``) never imports it, and
nothing here imports the runtime. Each plugin is a small keyword-only dataclass with one ``setup``;
shared mechanics are plain functions beside them:

* ``tasks``: what a plugin writes into a task, via ``partial_config`` (run.Partial) and
  ``script_overrides`` (run.Script args);
* ``executor_traits``: what differs per NeMo Run executor, one table keyed by executor type;
* ``quoting``: ``QuotingChain``, how a string survives an executor's shell layers;
* ``nsys_launcher``, ``ft_launcher``: the launcher changes; ``nsys_binary``: no nsys where a
  local job runs is refused at ``exp.run()``; ``edits``: plan first, then apply;
* ``nemo_run_compat``: the few private NeMo Run attributes we must touch, and why.
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
