"""Launch nsys through the job-side wrapper ``bridge-plugins-nsys`` instead of ``nsys`` itself.

NeMo Run starts the job as ``<executor.get_nsys_entrypoint()> profile OPTIONS... COMMAND...``,
its options fixed at submission; the wrapper fits them to the nsys on the node at job start
(docs/plugins.md "nsys"). Only the program changes, on this executor object only (the job's copy
made by ``exp.add``), keeping what the executor wraps around ``nsys`` (Slurm's GPU metrics).
"""

from __future__ import annotations

import os
import sys

import nemo_run as run

from bridge_plugins.plugins.executor_traits import ExecutorTraits

WRAPPER = "bridge-plugins-nsys"
"""The console script (pyproject.toml) that runs bridge_plugins.runtime.entry.nsys_launch."""


def wrapper_program(traits: ExecutorTraits) -> str:
    """This install's wrapper by path when the job runs here (the venv may not be on PATH), else
    by name: on a cluster or in a container, the bridge_plugins install the job imports provides it."""
    if traits.runs_job_here:
        beside = os.path.join(os.path.dirname(sys.executable), WRAPPER)
        if os.access(beside, os.X_OK):
            return beside
    return WRAPPER


def with_wrapper(entrypoint: str, program: str) -> str:
    """``entrypoint`` with its final ``nsys`` replaced by ``program``."""
    head, sep, tail = entrypoint.rpartition("nsys")
    return f"{head}{program}{tail}" if sep and not tail.strip() else entrypoint


def route_nsys_through_wrapper(executor: run.Executor, traits: ExecutorTraits) -> None:
    """Make NeMo Run start the wrapper where it would start ``nsys`` (idempotent)."""
    if getattr(executor.get_nsys_entrypoint, "bridge_plugins_wrapper", False):
        return
    original = executor.get_nsys_entrypoint
    program = wrapper_program(traits)

    def get_nsys_entrypoint() -> tuple[str, str]:
        entrypoint, postfix = original()
        return with_wrapper(entrypoint, program), postfix

    get_nsys_entrypoint.bridge_plugins_wrapper = True  # type: ignore[attr-defined]
    object.__setattr__(executor, "get_nsys_entrypoint", get_nsys_entrypoint)
