"""The job side: runs inside every rank of the training job. Never imports nemo_run; torch is
imported only when a selected rank enters the controller (the backends import it)."""

from bridge_plugins.runtime.controller import ProfilingController

__all__ = ["ProfilingController"]
