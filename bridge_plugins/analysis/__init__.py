"""Readers of a job's profiling artifacts: what ``bridge-plugins summary``, ``compare``, ``memory``
and ``report`` show. Imports neither torch nor nemo_run: analysis runs on a login node with only
the files.

``summarize`` and ``compare`` (the two facades) are modules here; the readers behind them are in
``trace/`` (Chrome traces), ``memory/`` (CUDA memory snapshots), ``report/`` (the HTML report) and
``text/`` (terminal output). This package re-exports nothing, so no name shadows a submodule.
"""
