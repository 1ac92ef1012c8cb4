"""The private NeMo Run 0.11.1 attributes we must touch, each with why; nothing else uses them.

Keep every private access here, so a NeMo Run upgrade is checked in one file.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

import nemo_run as run


def reset_launcher_setup(executor: run.Executor) -> None:
    """Make the executor configure a swapped-in launcher again.

    SlurmExecutor configures its launcher once, on the first ``get_launcher()``
    (``Executor._launcher_setup``, core/execution/base.py ~109). Replacing ``executor.launcher``
    afterwards skips that step: FaultTolerance then fails with a bare AssertionError when the
    sbatch script is rendered (slurm.py ~1086), and Torchrun would start N*N processes. NeMo Run
    has no public way to say "the launcher changed".
    """
    executor._launcher_setup = False


def dryrun_request(job):
    """What the scheduler would submit for ``job`` after ``exp.dryrun()`` (Popen argv, sbatch
    request, docker containers). NeMo Run keeps it only as ``Job._dryrun_info``; the public
    ``dryrun`` prints it and returns nothing."""
    return job._dryrun_info.request


def set_tunnel_job_dir(executor: run.Executor, experiment_id: str) -> None:
    """Give a SlurmExecutor's tunnel its job dir outside an Experiment (tests that call a
    plugin's ``setup`` directly). ``Experiment`` does this in its private preparation step via
    ``Tunnel._set_job_dir``; ``Executor.assign`` does not."""
    executor.tunnel._set_job_dir(experiment_id)


def _hooks_on_current_experiment(method: str, wrap: Callable[[Callable, list], Callable]) -> list | None:
    """The current Experiment's hook list for ``method`` (None outside an Experiment); on first use
    the method is replaced on that one instance by ``wrap(original, hooks)``.

    The current Experiment is the private contextvar ``_current_experiment`` (run/experiment.py ~70).
    """
    from nemo_run.run.experiment import _current_experiment

    exp = _current_experiment.get(None)
    if exp is None:
        return None
    key = f"_bridge_plugins_hooks_{method}"
    hooks = exp.__dict__.get(key)
    if hooks is None:
        hooks = exp.__dict__[key] = []
        setattr(exp, method, wrap(getattr(exp, method), hooks))
    return hooks


def _run_after_checks(unchecked: Callable, checks: list) -> Callable:
    signature = inspect.signature(unchecked)

    @functools.wraps(unchecked)
    def run_after_checks(*args, **kwargs):
        if not signature.bind(*args, **kwargs).arguments.get("direct", False):
            for each in checks:
                each()
        return unchecked(*args, **kwargs)

    return run_after_checks


def check_before_run(check: Callable[[], None]) -> None:
    """Call ``check`` first thing in the current Experiment's ``run()``, before anything is
    prepared or launched; not in ``dryrun()``, nor in ``run(direct=True)`` (which runs the task in
    this process without the executor's launcher).

    A plugin's ``setup`` runs in ``exp.add``, before NeMo Run knows whether the experiment will be
    dry run or run, and NeMo Run has no launch-time hook for plugins: ``run`` is wrapped on the
    current Experiment, once. Outside an Experiment (``setup`` called directly) there is no run to check.
    """
    checks = _hooks_on_current_experiment("run", _run_after_checks)
    if checks is not None:
        checks.append(check)


def _wait_then_report(unwrapped: Callable, callbacks: list) -> Callable:
    @functools.wraps(unwrapped)
    def wait_then_report(*args, **kwargs):
        try:
            return unwrapped(*args, **kwargs)
        finally:
            jobs = kwargs.get("jobs", args[0] if args else [])
            for each in callbacks:
                each(list(jobs))

    return wait_then_report


def after_jobs_end(callback: Callable[[list], None]) -> None:
    """Call ``callback(jobs)`` each time the current Experiment has waited for jobs to end.

    ``exp.run()`` returns normally when a job fails, and the driver's terminal shows only the
    state. NeMo Run waits in the private ``Experiment._wait_for_jobs(jobs=...)`` (from ``run`` when
    it waits, else from ``__exit__``); it is wrapped on the current Experiment, once.
    """
    callbacks = _hooks_on_current_experiment("_wait_for_jobs", _wait_then_report)
    if callbacks is not None:
        callbacks.append(callback)
