"""A job that runs on this machine under nsys needs an ``nsys`` binary here: say so, in one line.

Without one, NeMo Run's launch ends in torchx's ``Popen`` FileNotFoundError traceback. A plugin's
``setup`` runs in ``exp.add``, before NeMo Run knows whether the experiment will be dry run (which
needs no nsys) or run, so setup only warns, and ``exp.run()`` refuses with
:class:`~bridge_plugins.plugins.edits.NsysNotFoundError` before anything is prepared or launched.
The check is made again at ``run()``: an nsys installed in between is found.
"""

from __future__ import annotations

import os
import shutil

import nemo_run as run

from bridge_plugins.plugins.edits import Edit, NsysNotFoundError, NsysNotFoundWarning, warn
from bridge_plugins.plugins.executor_traits import ExecutorTraits
from bridge_plugins.plugins.nemo_run_compat import check_before_run


def plan_nsys_binary_check(owner: str, executor: run.Executor, traits: ExecutorTraits) -> Edit | None:
    """Warn now and return the edit that makes ``exp.run()`` refuse, when the job would run here
    without nsys; None otherwise (remote executors look for nsys where the job runs)."""
    if not traits.runs_job_here or _has_nsys(executor):
        return None
    warn(_message(owner, executor, "so exp.run() will refuse to launch it"), NsysNotFoundWarning)

    def refuse_without_nsys() -> None:
        if not _has_nsys(executor):
            raise NsysNotFoundError(_message(owner, executor, "so nothing was launched"))

    return lambda: check_before_run(refuse_without_nsys)


def _has_nsys(executor: run.Executor) -> bool:
    """nsys on the PATH the job will get: the executor's own PATH, else this process's."""
    return shutil.which("nsys", path=executor.env_vars.get("PATH", os.environ.get("PATH"))) is not None


def _message(owner: str, executor: run.Executor, consequence: str) -> str:
    return (
        f"{owner}: there is no 'nsys' binary on the job's PATH, and {type(executor).__name__} runs the job on "
        f"this machine, {consequence}; install Nsight Systems (or put nsys on the executor's PATH), or use "
        f"exp.dryrun() to see the command without running it"
    )
