"""The main job: run the tiny GPT recipe through NeMo Run with a profiling plugin, then report.

    python -m recipes                                  # LocalExecutor, torchrun, 2 CPU ranks,
                                                       # PyTorch profiler on steps 10-14 of rank 0
    python -m recipes --profiler nsys --dryrun         # print the launch command, run nothing
    python -m recipes --executor slurm --account bridge --partition debug

It waits for the job, showing its progress, and prints the steps captured, every artifact per
rank with its size, the top operators by self time, and how to open the files.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import List, Optional

REPO = Path(__file__).resolve().parents[1]


def parse_ranks(text: str) -> List[int]:
    if text.strip().lower() in ("all", "[]", ""):
        return []
    try:
        return [int(r) for r in text.replace("[", "").replace("]", "").split(",") if r.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--ranks {text!r}: give comma-separated global ranks (e.g. 0,1) or 'all'")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m recipes", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--profiler", choices=["pytorch", "nsys", "none"], default="pytorch")
    p.add_argument("--start", type=int, default=10, help="first profiled step (0-based, inclusive); default 10")
    p.add_argument("--end", type=int, default=15, help="first step after the window (exclusive); default 15")
    p.add_argument("--ranks", type=parse_ranks, default=[0], help="global ranks that profile: 0,1 or 'all'; default 0")
    p.add_argument("--memory-history", action="store_true", help="record CUDA memory history and snapshot per rank (needs a GPU)")
    p.add_argument("--record-shapes", action="store_true", help="record operator input shapes")
    p.add_argument("--nproc", type=int, default=2, help="ranks (torchrun processes per node); default 2")
    p.add_argument("--steps", type=int, default=20, help="training steps; default 20")
    p.add_argument("--executor", choices=["local", "slurm"], default="local")
    p.add_argument("--account", default=os.environ.get("BRIDGE_SLURM_ACCOUNT"), help="Slurm account")
    p.add_argument("--partition", default=os.environ.get("BRIDGE_SLURM_PARTITION"), help="Slurm partition")
    p.add_argument("--time", default="00:10:00", help="Slurm time limit; default 00:10:00")
    p.add_argument("--no-torchrun", action="store_true", help="on Slurm, one task per rank (srun) instead of torchrun")
    p.add_argument("--base-dir", default=None, help="NeMo Run home for the experiment; default $NEMORUN_HOME or ~/.nemo_run")
    p.add_argument("--name", default="tiny_gpt_profiling", help="experiment title")
    p.add_argument("--dryrun", action="store_true", help="print the launch command / sbatch script; run nothing")
    return p


def check_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    if args.nproc < 1 or args.steps < 1:
        parser.error("--nproc and --steps must be >= 1")
    if args.profiler != "none" and args.end > args.steps:
        parser.error(f"the window --start {args.start} --end {args.end} runs past the last step ({args.steps - 1}); raise --steps or lower --end")
    if args.executor == "slurm" and not (args.account and args.partition):
        parser.error("--executor slurm needs --account and --partition (or BRIDGE_SLURM_ACCOUNT / BRIDGE_SLURM_PARTITION)")
    if args.memory_history and args.profiler == "none":
        parser.error("--memory-history needs a window: use it with --profiler pytorch or --profiler nsys")
    if args.profiler == "nsys" and not args.dryrun and shutil.which("nsys") is None:
        parser.error(
            "--profiler nsys needs the Nsight Systems 'nsys' binary on PATH, and there is none here. "
            "Install Nsight Systems on the machines that run the job, or add --dryrun to print the launch command "
            "(with its nsys wrapper) without running it."
        )


def make_plugins(args: argparse.Namespace):
    from bridge_plugins import NsysPlugin, PyTorchProfilerPlugin

    if args.profiler == "none":
        return []
    common = dict(profile_step_start=args.start, profile_step_end=args.end, profile_ranks=args.ranks, record_shapes=args.record_shapes)
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
    if not args.no_torchrun:
        executor.launcher = run.Torchrun()
        # torchrun runs every rank inside one Slurm task: give that task a CPU per rank
        executor.cpus_per_task = args.nproc
    return executor


def launch_text(request) -> str:
    """What NeMo Run would launch: the sbatch script (Slurm) or the command line (local)."""
    import shlex

    if hasattr(request, "materialize"):
        return "sbatch script:\n" + request.materialize()
    lines = []
    for role, replicas in request.role_params.items():
        for replica in replicas:
            lines.append(f"launch command ({role}, cwd {replica.cwd}):\n  {shlex.join(replica.args)}")
    return "\n".join(lines)


class Progress:
    """Prints the job's training log lines (step, loss, artifacts) while NeMo Run waits for it."""

    KEYS = ("| loss", "wrote ", "profiling window", "WARNING", "ERROR", "Traceback", "Error")

    def __init__(self, job_dir: Path):
        self.job_dir, self.seen, self.stop = job_dir, {}, threading.Event()
        self.printed = set()  # NeMo Run writes each line to several logs (per rank, combined)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.started = time.monotonic()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=5)
        self._poll()

    def _run(self) -> None:
        while not self.stop.wait(1.0):
            self._poll()

    def _poll(self) -> None:
        for log in sorted(self.job_dir.rglob("*.out")) + sorted(self.job_dir.rglob("*.log")):
            try:
                with open(log, errors="replace") as f:
                    f.seek(self.seen.get(log, 0))
                    chunk = f.read()
                    self.seen[log] = f.tell()
            except OSError:
                continue
            for line in chunk.splitlines():
                line = re.sub(r"^\[default\d+\]:", "", line.strip())
                if any(k in line for k in self.KEYS) and "USDT" not in line and line not in self.printed:
                    self.printed.add(line)
                    print(f"  [{time.monotonic() - self.started:5.1f}s] {line}", flush=True)


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(args, parser)
    from bridge_plugins.summary import report

    try:
        plugins = make_plugins(args)
    except (TypeError, ValueError) as e:
        parser.error(str(e))
    import nemo_run as run

    from recipes.tiny_gpt import tiny_gpt_recipe

    base_dir = os.path.abspath(os.path.expanduser(args.base_dir or os.environ.get("NEMORUN_HOME", "~/.nemo_run")))
    overrides = {"train__train_iters": args.steps}
    if args.memory_history and args.profiler == "nsys":
        # NsysPlugin leaves fields it does not own as the recipe set them
        overrides["profiling__record_memory_history"] = True
    recipe = tiny_gpt_recipe(**overrides)
    executor = make_executor(args, base_dir)
    print(f"[recipes] {args.profiler} profiler, window steps {args.start}-{args.end - 1}, ranks "
          f"{args.ranks or 'all'}, {args.nproc} rank(s), {args.steps} steps, executor {args.executor}", flush=True)
    with run.Experiment(args.name, base_dir=base_dir, enable_goodbye_message=False, log_level="WARN") as exp:
        exp.add(recipe, executor=executor, plugins=plugins, name="tiny_gpt")
        if args.dryrun:
            exp.dryrun(log=False)
            print(launch_text(exp.jobs[0]._dryrun_info.request))
            profiling = getattr(getattr(exp.jobs[0].task, "config", None), "profiling", None)
            if profiling is not None:
                print(f"job's profiling config: {dict(profiling.__arguments__)}")
            return 0
        job = exp.jobs[0]
        job_dir = Path(job.executor.job_dir)
        print(f"[recipes] job directory: {job_dir}", flush=True)
        t0 = time.monotonic()
        with Progress(job_dir):
            exp.run(detach=False, sequential=True)
            exp._wait_for_jobs(jobs=exp.jobs)  # NeMo Run waits here anyway; we wait inside Progress
            exp._waited = True
        state = str(job.status(runner=exp._runner))
    print(f"\n[recipes] job finished in {time.monotonic() - t0:.1f} s with state {state}")
    text, steps = report(job_dir)
    print(text)
    if steps:
        print("\nSteps captured per rank: " + ", ".join(f"rank {r}: {s[0]}-{s[-1]}" for r, s in sorted(steps.items()) if s))
    ok = "SUCCEEDED" in state
    if not ok:
        print(f"[recipes] the job did not succeed; its logs are under {job_dir}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
