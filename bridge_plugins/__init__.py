"""bridge_plugins: profile exactly the steps and ranks you ask for in NeMo Run training jobs.

Launch side (imports nemo_run): ``NsysPlugin``, ``PyTorchProfilerPlugin``, ``FaultTolerancePlugin``.
Job side (imports torch, never nemo_run): ``ProfilingController``. Shared: ``ProfilingConfig``, and
``BridgePluginsError`` / ``BridgePluginsWarning``, the bases of every error and warning we define.
The config, the plugins, the controller and ``__version__`` are resolved on first use, so a rank never pays
for ``import nemo_run`` (2-5 s, ~125 MB) and a driver script never imports torch through us.
"""

from typing import TYPE_CHECKING

from bridge_plugins.config.errors import BridgePluginsError, BridgePluginsWarning

if TYPE_CHECKING:
    from bridge_plugins.config.profiling import ProfilingConfig

__all__ = [
    "__version__",
    "ProfilingConfig",
    "BridgePluginsError",
    "BridgePluginsWarning",
    "ProfilingController",
    "NsysPlugin",
    "PyTorchProfilerPlugin",
    "FaultTolerancePlugin",
]

_LAZY = {
    "ProfilingConfig": "bridge_plugins.config.profiling",
    "ProfilingController": "bridge_plugins.runtime",
    "NsysPlugin": "bridge_plugins.plugins",
    "PyTorchProfilerPlugin": "bridge_plugins.plugins",
    "FaultTolerancePlugin": "bridge_plugins.plugins",
}


def _version() -> str:
    """The installed distribution's version (read on first use: importlib.metadata costs an import)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bridge-plugins")
    except PackageNotFoundError:  # a checkout on PYTHONPATH that pip never installed
        return "0+unknown"


def __getattr__(name: str):
    if name == "__version__":
        globals()[name] = value = _version()
        return value
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'bridge_plugins' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
