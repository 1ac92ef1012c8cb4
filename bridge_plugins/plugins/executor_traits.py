"""What differs per NeMo Run executor, as data: one table keyed by executor type.

Every fact was read from nemo_run 0.11.1 (``core/execution/*.py``,
``run/torchx_backend/{packaging.py,components/*.py,schedulers/*.py}``, torchx's local scheduler).
Adding an executor means adding one entry to ``TRAITS``; an executor missing from it is refused
with a clear error (a guess would put artifacts where nobody looks, or quote args wrongly).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nemo_run as run
from nemo_run.core.execution.launcher import LAUNCHER_MAP, FaultTolerance, Launcher, Torchrun

from bridge_plugins.jobdir.names import NSYS_SLURM_FILENAME

CONTAINER_JOB_DIR = "/nemo_run"
"""Where NeMo Run's container executors (and Slurm with a container image) mount the job dir."""


def _local_job_dir(executor: run.Executor) -> str | None:
    return executor.job_dir or None


def _slurm_has_container(executor: run.SlurmExecutor) -> bool:
    # Mirrors SlurmBatchRequest.materialize: any container image means /nemo_run is a mount.
    if executor.container_image is not None:
        return True
    return bool(executor.run_as_group and any(rg.container_image for rg in executor.resource_group))


def _slurm_job_dir(executor: run.SlurmExecutor) -> str | None:
    # Without a container NeMo Run rewrites /nemo_run in the sbatch text to the job dir on the
    # cluster, but not in the packaged task configs: a run.Partial needs the real path.
    if _slurm_has_container(executor):
        return CONTAINER_JOB_DIR
    base = executor.tunnel.job_dir if executor.tunnel is not None else ""
    return os.path.join(base, Path(executor.job_dir).name) if base else executor.job_dir or None


def _container_job_dir(executor: run.Executor) -> str | None:
    return CONTAINER_JOB_DIR


@dataclass(frozen=True)
class ExecutorTraits:
    """How one executor type runs the job, as far as the plugins care."""

    job_dir: Callable[[run.Executor], str | None]
    """Where the running job sees its NeMo Run job directory (None: not known yet)."""
    delivery: str
    """How the command line reaches the program: ``"argv"`` (Popen, no shell), ``"bash"`` (args
    joined with spaces into a bash script, unquoted), ``"docker"`` (joined into ``bash -c "..."``,
    which docker-py splits with shlex before bash parses it)."""
    macros: bool
    """The scheduler runs string.Template ``safe_substitute`` over every arg (``$$`` -> ``$``,
    ``${img_root}``, ``${replica_id}`` ...): torchx's local scheduler always, others when the
    executor has ``macro_values()``."""
    nsys_report_in_container: bool = False
    """NeMo Run passes the *host* job dir to nsys ``-o``, which the container does not see: the
    plugin swaps in a launcher that writes under ``/nemo_run``."""
    nsys_filename: str | None = None
    """nsys report name, when NeMo Run's ``profile_%p`` would repeat across nodes."""
    nsys_gpu_metrics: bool = False
    """NeMo Run honours ``nsys_gpu_metrics``, by wrapping the command in ``bash -c '...'``."""
    nsys_empty_arg: bool = False
    """With nsys, NeMo Run appends ``get_nsys_entrypoint()``'s empty postfix to the command as an
    argument of its own (joined into a shell line elsewhere, where it vanishes)."""
    runs_job_here: bool = False
    """The job runs on the machine that calls ``setup``, with this process's environment: what
    it will execute (the ``nsys`` binary) can be checked now."""


TRAITS: dict[type, ExecutorTraits] = {
    run.LocalExecutor: ExecutorTraits(
        job_dir=_local_job_dir, delivery="argv", macros=True, nsys_empty_arg=True, runs_job_here=True
    ),
    run.SlurmExecutor: ExecutorTraits(
        job_dir=_slurm_job_dir, delivery="bash", macros=True, nsys_filename=NSYS_SLURM_FILENAME, nsys_gpu_metrics=True
    ),
    run.DockerExecutor: ExecutorTraits(
        job_dir=_container_job_dir, delivery="docker", macros=False, nsys_report_in_container=True
    ),
    run.SkypilotExecutor: ExecutorTraits(
        job_dir=_container_job_dir, delivery="bash", macros=True, nsys_report_in_container=True
    ),
    run.SkypilotJobsExecutor: ExecutorTraits(
        job_dir=_container_job_dir, delivery="bash", macros=True, nsys_report_in_container=True
    ),
    run.DGXCloudExecutor: ExecutorTraits(job_dir=_container_job_dir, delivery="bash", macros=False),
    run.LeptonExecutor: ExecutorTraits(job_dir=_container_job_dir, delivery="bash", macros=False),
}


def traits_for(executor: run.Executor, owner: str = "bridge_plugins") -> ExecutorTraits:
    """The executor's entry in ``TRAITS`` (a subclass uses its nearest listed base class)."""
    for cls in type(executor).__mro__:
        if cls in TRAITS:
            return TRAITS[cls]
    known = ", ".join(sorted(c.__name__ for c in TRAITS))
    raise TypeError(
        f"{owner}: {type(executor).__name__} is not supported (supported: {known}); where its job sees "
        f"its files and how it quotes arguments are unknown: add an entry to "
        f"bridge_plugins.plugins.executor_traits.TRAITS"
    )


def job_dir_seen_by_job(executor: run.Executor, owner: str = "bridge_plugins") -> str | None:
    """The path under which the running job sees its NeMo Run job directory, or None if unknown."""
    return traits_for(executor, owner).job_dir(executor)


def peek_launcher(executor: run.Executor) -> Launcher | None:
    """The launcher the executor will use, without ``get_launcher()``'s side effects.

    ``get_launcher()`` turns a string into an object and, on Slurm, rewrites ntasks_per_node;
    planning must not mutate, so a string is resolved into a fresh, unattached instance.
    """
    launcher = executor.launcher
    if isinstance(launcher, str):
        return LAUNCHER_MAP[launcher]()
    return launcher


def quotes_script_args(launcher: Launcher | None) -> bool:
    """NeMo Run's torchrun and ft_launcher components shlex-quote every script arg."""
    return isinstance(launcher, (Torchrun, FaultTolerance))


def is_fault_tolerant(launcher: Launcher | None) -> bool:
    return isinstance(launcher, FaultTolerance)


def env_value(executor: run.Executor, value: str, owner: str = "bridge_plugins") -> str:
    """``value`` encoded for ``executor.env_vars`` so that the job's environment holds it unchanged.

    Executors that write ``export KEY=VALUE`` lines into a shell script (Slurm) need shell quoting;
    the others hand the value to Popen or docker-py as it is.
    """
    return shlex.quote(value) if traits_for(executor, owner).delivery == "bash" else value


def argv_fixes(executor: run.Executor, launcher: Launcher | None) -> tuple[str, ...]:
    """What NeMo Run does to a run.Script's argv on ``executor`` that no shell undoes, as
    ``UNQUOTE_ARGV`` options: ``--quoted`` (the launcher shell-quotes every arg, and the job is
    started without a shell), ``--nsys-postfix`` (nsys wraps the job and an empty arg is appended)."""
    traits = traits_for(executor)
    if traits.delivery != "argv":
        return ()
    fixes: tuple[str, ...] = ("--quoted",) if quotes_script_args(launcher) else ()
    if traits.nsys_empty_arg and launcher is not None and launcher.nsys_profile:
        fixes += ("--nsys-postfix",)
    return fixes
