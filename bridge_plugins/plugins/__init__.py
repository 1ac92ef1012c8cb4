"""Launch side: NeMo Run plugins that write a ProfilingConfig into a task and set up the executor.

This package imports nemo_run; the job side (``bridge_plugins.runtime``) never imports it, and
nothing here imports the runtime. Shared mechanics live in ``tasks`` (writing into run.Partial
and run.Script tasks) and ``executors`` (what each NeMo Run executor does with paths, nsys and
args); each plugin is a small keyword-only dataclass with one ``setup``.
"""

from bridge_plugins.plugins.executors import ProfilingPluginWarning
from bridge_plugins.plugins.fault_tolerance import FaultTolerancePlugin
from bridge_plugins.plugins.nsys import NsysPlugin
from bridge_plugins.plugins.pytorch import PyTorchProfilerPlugin
from bridge_plugins.plugins.tasks import default_script_args_converter

__all__ = [
    "NsysPlugin",
    "PyTorchProfilerPlugin",
    "FaultTolerancePlugin",
    "ProfilingPluginWarning",
    "default_script_args_converter",
]
