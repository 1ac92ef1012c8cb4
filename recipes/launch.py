"""What ``python -m recipes`` launches: the plugins, the executor (local or Slurm) and its
environment, the dry run's text, and the plugins' warnings as one line each."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def slurm_nsys_check() -> str:
    """An sbatch setup line: stop the job with a clear error when the compute node has no nsys.

    Lower-case "error:": NeMo Run's sbatch script runs under ``set -v``, which echoes this line's
    source into the log on every run, and the progress display shows lines with "ERROR" in them.
    A failed job shows the end of its log (``log_tail``), where this message then is.
    """
    message = (
        "[recipes] error: --profiler nsys, but the Nsight Systems 'nsys' binary is not on PATH on node $(hostname). "
        "Install Nsight Systems on the compute nodes (or load its module in the job environment), or run without "
        "--profiler nsys."
    )
    return f'command -v nsys >/dev/null 2>&1 || {{ echo "{message}" >&2; exit 127; }}'


def run_header(args: argparse.Namespace) -> str:
    """The first line of a run: what will be profiled (a run without profiler has no window)."""
    what = "no profiler"
    if args.profiler != "none":
        ranks = ",".join(map(str, args.ranks)) or "all"
        what = f"{args.profiler} profiler, window steps {args.start}-{args.end - 1}, ranks {ranks}"
    return f"[recipes] {what}, {args.nproc} rank(s), {args.steps} steps, executor {args.executor}"


def make_plugins(args: argparse.Namespace):
    from bridge_plugins import NsysPlugin, PyTorchProfilerPlugin

    if args.profiler == "none":
        return []
    common = dict(
        profile_step_start=args.start,
        profile_step_end=args.end,
        profile_ranks=args.ranks,
        record_shapes=args.record_shapes,
    )
    if args.profiler == "nsys":
        return [NsysPlugin(**common)]
    return [PyTorchProfilerPlugin(record_memory_history=args.memory_history, **common)]


def job_env() -> dict:
    """What the job needs to find this checkout's code and the same Python, wherever it runs."""
    venv_bin = str(Path(sys.executable).parent)
    return {
        "PATH": f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        "PYTHONUNBUFFERED": "1",
    }


def make_executor(args: argparse.Namespace, base_dir: str):
    import nemo_run as run

    if args.executor == "local":
        return run.LocalExecutor(ntasks_per_node=args.nproc, launcher="torchrun", env_vars=job_env())
    # LocalTunnel copies nothing: its job_dir must be the experiments directory NeMo Run writes to.
    executor = run.SlurmExecutor(
        account=args.account,
        partition=args.partition,
        nodes=1,
        ntasks_per_node=args.nproc,
        time=args.time,
        tunnel=run.LocalTunnel(job_dir=os.path.join(base_dir, "experiments")),
        packager=run.Packager(),
        env_vars=job_env(),
    )
    if args.profiler == "nsys":
        executor.setup_lines = slurm_nsys_check()
    if not args.no_torchrun:
        executor.launcher = run.Torchrun()
        # torchrun runs every rank inside one Slurm task: give that task a CPU per rank
        executor.cpus_per_task = args.nproc
    return executor


def launch_text(request) -> str:
    """What NeMo Run would launch: the sbatch script (Slurm) or the command line (local)."""
    if hasattr(request, "materialize"):
        return "sbatch script:\n" + request.materialize()
    lines = []
    for role, replicas in request.role_params.items():
        for replica in replicas:
            lines.append(f"launch command ({role}, cwd {replica.cwd}):\n  {shlex.join(replica.args)}")
    return "\n".join(lines)


@contextmanager
def plugin_warnings_as_lines(dryrun: bool) -> Iterator[None]:
    """The plugins' warnings (``ProfilingPluginWarning``) as one ``[recipes] warning:`` line each,
    not Python's two lines naming our source file; any other warning is shown as Python would.
    On --dryrun, "no nsys here, exp.run() will refuse" is a note: a dry run is what it suggests."""
    from bridge_plugins.plugins import NsysNotFoundWarning, ProfilingPluginWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ProfilingPluginWarning)
        yield
    for w in caught:
        if dryrun and issubclass(w.category, NsysNotFoundWarning):
            print(
                "[recipes] note: no 'nsys' binary on PATH here: the command below is printed, not run; "
                "running it needs Nsight Systems on the machine that runs the job",
                file=sys.stderr,
                flush=True,
            )
        elif issubclass(w.category, ProfilingPluginWarning):
            print(f"[recipes] warning: {w.message}", file=sys.stderr, flush=True)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
