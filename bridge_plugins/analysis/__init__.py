"""Readers of a job's profiling artifacts: what ``bridge-plugins summary`` and ``compare`` print.

Public: :func:`summarize` (the summary dict; its schema is in ``summarize.py``), :func:`compare`,
and :class:`NothingToRead` (no input could be read). Imports neither torch nor nemo_run: analysis
runs on a login node with only the files.
"""

from bridge_plugins.analysis.job import NothingToRead
from bridge_plugins.analysis.summarize import SCHEMA, summarize

__all__ = ["SCHEMA", "NothingToRead", "summarize"]
