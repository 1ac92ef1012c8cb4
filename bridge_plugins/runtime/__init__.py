"""The job side: runs inside every rank of the training job. Imports torch, never nemo_run."""

from bridge_plugins.runtime.controller import ProfilingController

__all__ = ["ProfilingController"]
