"""The main job: run the tiny GPT recipe through NeMo Run with a profiling plugin, then report.

    python -m recipes                                  # LocalExecutor, torchrun, 2 CPU ranks,
                                                       # PyTorch profiler on steps 10-14 of rank 0
    python -m recipes --profiler nsys --dryrun         # print the launch command, run nothing
    python -m recipes --executor slurm --account bridge --partition debug

Then it prints the steps captured, every artifact per rank, the summary, and the HTML report's path.
Ctrl-C stops the job and still prints what it captured (exit 130). Started with `&` in a script,
it ignores Ctrl-C, as the shell asks of a background command: stop it with `kill PID` (SIGTERM,
the same stop, exit 143).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shlex
import shutil
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from recipes.baseline import earlier_job
from recipes.job_output import Progress, log_tail

REPO = Path(__file__).resolve().parents[1]


RANKS_FIX = "give distinct global ranks >= 0, comma-separated (e.g. 0,1), or 'all'"
"""How every ``--ranks`` error ends: one wording for the three ways a value can be wrong."""


def ranks_error(text: str, why: str) -> str:
    return f"--ranks {text!r}: {why}; {RANKS_FIX}"


def parse_ranks(text: str) -> list[int]:
    """``--ranks``: 'all' (or '[]', as in the plugins' ``profile_ranks``), or distinct ranks such as 0,1.

    An empty value is refused, never read as 'all': it is what an unset shell variable gives."""
    if text.strip().lower() in ("all", "[]"):
        return []
    items = [r.strip() for r in text.strip().removeprefix("[").removesuffix("]").split(",")]
    if "" in items:
        raise argparse.ArgumentTypeError(ranks_error(text, "an empty rank"))
    ranks = []
    for item in items:
        if not re.fullmatch(r"-?[0-9]+", item):
            raise argparse.ArgumentTypeError(ranks_error(text, f"not a number: {item!r}"))
        rank = int(item)
        if rank < 0:
            raise argparse.ArgumentTypeError(ranks_error(text, f"a negative rank, {rank}"))
        if rank in ranks:
            raise argparse.ArgumentTypeError(ranks_error(text, f"rank {rank} twice"))
        ranks.append(rank)
    return ranks


class OneLineParser(argparse.ArgumentParser):
    """A bad flag is one line (``python -m recipes: error: ...``), not argparse's usage block first."""

    def error(self, message: str):
        message = re.sub(r"^argument (--[\w-]+): (?=\1 )", "", message)  # "--ranks '': ..." names the flag once
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="python -m recipes", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--profiler",
        choices=["pytorch", "nsys", "none"],
        default="pytorch",
        help="which profiler captures the window: the PyTorch profiler (a Chrome trace per rank), "
        "Nsight Systems (.nsys-rep reports; needs nsys where the job runs) or none; default pytorch",
    )
    p.add_argument("--start", type=int, default=10, help="first profiled step (0-based, inclusive); default 10")
    p.add_argument("--end", type=int, default=15, help="first step after the window (exclusive); default 15")
    p.add_argument("--ranks", type=parse_ranks, default=[0], help="global ranks that profile: 0,1 or 'all'; default 0")
    p.add_argument(
        "--memory-history", action="store_true", help="record CUDA memory history and snapshot per rank (needs a GPU)"
    )
    p.add_argument("--record-shapes", action="store_true", help="record operator input shapes")
    p.add_argument("--nproc", type=int, default=2, help="ranks (torchrun processes per node); default 2")
    p.add_argument("--steps", type=int, default=20, help="training steps; default 20")
    p.add_argument(
        "--executor",
        choices=["local", "slurm"],
        default="local",
        help="where the job runs: this machine (NeMo Run LocalExecutor) or Slurm (SlurmExecutor, "
        "submitted from this machine with sbatch); default local",
    )
    p.add_argument("--account", default=os.environ.get("BRIDGE_SLURM_ACCOUNT"), help="Slurm account")
    p.add_argument("--partition", default=os.environ.get("BRIDGE_SLURM_PARTITION"), help="Slurm partition")
    p.add_argument("--time", default="00:10:00", help="Slurm time limit; default 00:10:00")
    p.add_argument("--no-torchrun", action="store_true", help="on Slurm, one task per rank (srun) instead of torchrun")
    p.add_argument(
        "--base-dir", default=None, help="NeMo Run home for the experiment; default $NEMORUN_HOME or ~/.nemo_run"
    )
    p.add_argument(
        "--inject",
        choices=sorted(INJECTED),
        default=None,
        help="plant a problem in the training loop for `bridge-plugins diagnose` to find: "
        + "; ".join(f"{k}: {v[0]}" for k, v in sorted(INJECTED.items()))
        + "; default none",
    )
    p.add_argument("--name", default="tiny_gpt_profiling", help="experiment title")
    p.add_argument("--dryrun", action="store_true", help="print the launch command / sbatch script; run nothing")
    return p


INJECTED: dict[str, tuple[str, Callable[[int, int], dict[str, object]]]] = {
    "sync": (
        "a host-device sync (.item()) every step, finding sync_point",
        lambda start, end: {"train__sync_every_step": True},
    ),
    "slow-input": (
        "a 1 s data loader in the window's steps, finding input_bound",
        lambda start, end: {"train__data_delay_ms": 1000.0, "train__data_delay_steps": list(range(start, end))},
    ),
    "slow-step": (
        "one step 3 s slower than the others (the window's second), finding step_variance",
        lambda start, end: {"train__data_delay_ms": 3000.0, "train__data_delay_steps": [min(start + 1, end - 1)]},
    ),
}
"""The problems ``--inject`` plants (recipes.train's knobs), each with what ``diagnose`` then reports."""


PLAIN_NAME = re.compile(r"[A-Za-z0-9._-]+")
"""Names that NeMo Run hands to a shell unquoted and that must pass unchanged: the Slurm account and
partition (the srun line) and the experiment name (two directories of the job directory's path)."""


def check_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    for flag, value in (("--nproc", args.nproc), ("--steps", args.steps)):
        if value < 1:
            parser.error(f"{flag} {value}: give 1 or more")
    if args.profiler != "none" and args.start < 0:
        parser.error(f"--start {args.start}: steps are counted from 0; give --start 0 or more")
    if args.profiler != "none" and args.end <= args.start:
        parser.error(
            f"--end {args.end}: must be greater than --start {args.start} (the window is --start <= step < --end); "
            f"give --end {args.start + 1} or more"
        )
    if args.profiler != "none" and args.end > args.steps:
        parser.error(
            f"the window --start {args.start} --end {args.end} runs past the last step ({args.steps - 1}); raise --steps or lower --end"
        )
    if args.executor == "slurm" and not (args.account and args.partition):
        parser.error(
            "--executor slurm needs --account and --partition (or BRIDGE_SLURM_ACCOUNT / BRIDGE_SLURM_PARTITION)"
        )
    if args.inject and args.profiler != "pytorch":
        parser.error(f"--inject {args.inject}: diagnose reads PyTorch profiler traces; use it with --profiler pytorch")
    if args.memory_history and args.profiler == "none":
        parser.error("--memory-history needs a window: use it with --profiler pytorch or --profiler nsys")
    missing = [r for r in args.ranks if r >= args.nproc]
    if args.profiler != "none" and missing:
        no_such = f"no rank {','.join(map(str, missing))} with --nproc {args.nproc} (ranks 0-{args.nproc - 1}; raise --nproc for more)"
        parser.error(ranks_error(",".join(map(str, args.ranks)), no_such))
    for flag, value in (("--account", args.account), ("--partition", args.partition)):
        if args.executor == "slurm" and not PLAIN_NAME.fullmatch(value):
            # NeMo Run writes the job name (made from the account) unquoted into the srun line
            parser.error(f"{flag} {value!r}: a Slurm name is letters, digits and . _ - (no spaces or shell characters)")
    if not PLAIN_NAME.fullmatch(args.name):
        parser.error(
            f"--name {args.name!r}: the experiment name becomes part of the job directory, which NeMo Run hands "
            f"to a shell unquoted; use letters, digits and . _ - (no spaces, slashes or shell characters)"
        )
    base = str(resolve_base_dir(args.base_dir))
    if shlex.quote(base) != base:
        parser.error(
            f"--base-dir {base!r}: NeMo Run hands the job directory to a shell unquoted (mkdir -p, srun --output), "
            f"so spaces and shell characters would be run or split; use letters, digits and @%+=:,./_-"
        )
    problem = base_dir_problem(resolve_base_dir(args.base_dir))
    if problem:
        where = (
            f"--base-dir {args.base_dir}"
            if args.base_dir
            else f"NeMo Run home {resolve_base_dir(None)} ($NEMORUN_HOME)"
        )
        parser.error(f"{where}: {problem}; give --base-dir a directory NeMo Run may write to")
    if args.profiler == "nsys" and not args.dryrun and shutil.which("nsys") is None:
        if args.executor == "slurm":
            # clusters often install nsys on the compute nodes only: the job checks there (slurm_nsys_check)
            print(
                "[recipes] warning: no Nsight Systems 'nsys' binary on PATH on this host; submitting anyway, since "
                "clusters often have it on the compute nodes only. The job stops at once with a clear error on its "
                "compute node if it is missing there too.",
                file=sys.stderr,
            )
            return
        parser.error(
            "--profiler nsys needs the Nsight Systems 'nsys' binary on PATH, and there is none here. "
            "Install Nsight Systems on the machines that run the job, or add --dryrun to print the launch command "
            "(with its nsys wrapper) without running it."
        )


def resolve_base_dir(base_dir: str | None) -> Path:
    """--base-dir, else $NEMORUN_HOME, else ~/.nemo_run, absolute."""
    return Path(os.path.abspath(os.path.expanduser(base_dir or os.environ.get("NEMORUN_HOME", "~/.nemo_run"))))


def base_dir_problem(base_dir: Path) -> str | None:
    """Why NeMo Run could not write under base_dir (a file in the way, no permission), or None."""
    existing = base_dir
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return (
            f"{existing} is not a directory" if existing == base_dir else f"{existing} (on its path) is not a directory"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable"
    return None


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


def how_to_open(arts, job_dir: Path, baseline: Path | None = None) -> list[str]:
    """How to read what the job wrote, what works offline first (air-gapped login nodes are common).

    ``arts`` is :func:`bridge_plugins.jobdir.scan.find_artifacts`'s result. Empty when there is nothing
    to open, so ``--profiler none`` prints no heading. The HTML report's own line comes before it.
    Every command runs as printed: real paths (``baseline``, an earlier job, for the comparison),
    never a placeholder a shell would read as a redirection.
    """
    if not (arts.traces or arts.memory or arts.nsys):
        return []
    out = ["How to open them (offline, on this machine):"]
    job = shlex.quote(str(job_dir))
    cli = cli_command()
    if arts.traces or arts.memory:
        out.append(f"  {cli} summary {job}    # steps, step times, top operators and kernels, per rank")
    if arts.traces and baseline is not None:
        compare_html = shlex.quote(str(job_dir / "compare_report.html"))
        out.append(
            f"  {cli} report {job} --baseline {shlex.quote(str(baseline))} -o {compare_html}    "
            f"# against the previous run of {baseline.parent.parent.name} ({baseline.parent.name})"
        )
    if arts.memory:
        snapshot = min(p for paths in arts.memory.values() for p in paths)
        out.append(f"  {cli} memory {shlex.quote(str(snapshot))}    # peak, timeline and top allocation sites")
    if arts.nsys:
        report = shlex.quote(str(min(arts.nsys)))
        out.append(f"  nsys stats {report}    # tables in the terminal (nsys-ui {report}: the GUI)")
    if arts.traces and baseline is None:
        out.append(
            "To compare with another run: run this again with the same --base-dir and --name; it then prints "
            "the report command with this job as the baseline."
        )
    if arts.traces:
        out.append("With network access: https://ui.perfetto.dev opens a .pt.trace.json.gz (the file stays local).")
    if arts.memory:
        out.append(
            "With network access: https://pytorch.org/memory_viz opens a .pickle snapshot (the file stays local)."
        )
    return out


def cli_command() -> str:
    """``bridge-plugins`` as the user can type it: by name when PATH finds this install, else by path.

    ``.venv/bin/python -m recipes`` (the README's command) runs without the venv activated, so a
    bare ``bridge-plugins`` would be "command not found" in the user's shell.
    """
    ours = Path(sys.executable).parent / "bridge-plugins"
    found = shutil.which("bridge-plugins")
    if found and ours.exists() and os.path.samefile(found, ours):
        return "bridge-plugins"
    return shlex.quote(str(ours)) if ours.exists() else f"{shlex.quote(sys.executable)} -m bridge_plugins"


def memory_note(args: argparse.Namespace, arts, device: str | None) -> str | None:
    """Why a job that asked for memory history has no snapshot (say so once, at the end)."""
    if not args.memory_history or arts.memory:
        return None
    if device == "cpu":
        why = (
            "because the ranks ran on CPU and memory history records the CUDA caching allocator "
            "(it needs a GPU). Training was not affected."
        )
    else:
        why = "see the warnings in the job's output above."
    return f"Memory history: no memory snapshot was written, {why}"


def write_html_report(job_dir: Path, summary: dict) -> Path | None:
    """Write ``bridge-plugins report``'s offline HTML page of ``summary`` beside the artifacts; its path.

    A report that fails is a warning, never an error: the job's artifacts are already safe and
    summarized above.
    """
    from bridge_plugins.analysis import render_report, with_top, write_report
    from bridge_plugins.jobdir.names import JOB_REPORT_NAME

    try:
        return write_report(render_report(with_top(summary, 10)), job_dir / JOB_REPORT_NAME)
    except Exception as e:  # noqa: BLE001 - reporting must not turn a finished job into a failure
        print(f"[recipes] warning: the HTML report could not be written: {e}", file=sys.stderr)
        return None


def summarize_job(job_dir: Path) -> dict | None:
    """Every figure of the job's traces and snapshots, each file read once; None if none is readable."""
    from bridge_plugins.analysis.summarize import summarize
    from bridge_plugins.jobdir.scan import NothingToRead

    try:
        return summarize([job_dir], top=None)
    except NothingToRead:
        return None


def print_summary(args: argparse.Namespace, job_dir: Path, device: str | None) -> None:
    """What the job wrote: artifacts and figures, steps per rank, memory history, how to open them."""
    from bridge_plugins.analysis import job_report, steps_line
    from bridge_plugins.jobdir.scan import find_artifacts

    if args.profiler == "none" and not args.memory_history:
        print("No profiling artifacts: the job ran with no profiler (--profiler none).")
        return
    arts = find_artifacts(job_dir)
    summary = summarize_job(job_dir)  # the text, the steps and the HTML report all read this one
    text, steps = job_report(job_dir, arts=arts, summary=summary)
    print(text)
    if steps:
        print("\n" + steps_line(steps))
    note = memory_note(args, arts, device)
    if note:
        print("\n" + note)
    html_report = write_html_report(job_dir, summary) if summary is not None else None
    if html_report is not None:
        print(f"\nHTML report: {html_report}  (opens in any browser, no network needed)")
    lines = how_to_open(arts, job_dir, earlier_job(job_dir))
    if lines:
        print("\n" + "\n".join(lines))


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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(args, parser)
    try:
        plugins = make_plugins(args)
    except (TypeError, ValueError) as e:
        parser.error(str(e))
    import nemo_run as run

    from bridge_plugins.plugins.nemo_run_compat import dryrun_request
    from recipes.ctrl_c import STOP_SIGNALS, cancel_on_ctrl_c
    from recipes.tiny_gpt import tiny_gpt_recipe

    base_dir = str(resolve_base_dir(args.base_dir))
    overrides = {"train__train_iters": args.steps}
    if args.memory_history and args.profiler == "nsys":
        # NsysPlugin leaves fields it does not own as the recipe set them
        overrides["profiling__record_memory_history"] = True
    if args.inject:
        overrides.update(INJECTED[args.inject][1](args.start, args.end))
    recipe = tiny_gpt_recipe(**overrides)
    executor = make_executor(args, base_dir)
    print(run_header(args), flush=True)
    # Progress prints the job's log lines while the Experiment waits for the job, which NeMo Run does
    # when its context exits: ``outer`` closes Progress after that wait (no private wait API needed).
    with ExitStack() as outer:
        with run.Experiment(
            args.name, base_dir=base_dir, enable_goodbye_message=False, log_level="WARN", skip_status_at_exit=True
        ) as exp:
            with plugin_warnings_as_lines(args.dryrun):
                exp.add(recipe, executor=executor, plugins=plugins, name="tiny_gpt")
            job = exp.jobs[0]
            if args.dryrun:
                exp.dryrun(log=False)
                print(launch_text(dryrun_request(job)))
                profiling = getattr(getattr(job.task, "config", None), "profiling", None)
                if profiling is not None:
                    print(f"job's profiling config: {dict(profiling.__arguments__)}")
                return 0
            job_dir = Path(job.executor.job_dir)
            print(f"[recipes] job directory: {job_dir}", flush=True)
            t0 = time.monotonic()
            progress = outer.enter_context(Progress(job_dir))
            interrupted = outer.enter_context(cancel_on_ctrl_c(exp, job.id))
            progress.stopping = lambda: bool(interrupted())  # the job's agent then logs our SIGTERM: not news
            exp.run(detach=False, sequential=True)
            if interrupted():  # pressed while launching: the cancel found no job yet
                exp.cancel(job.id)
        state = str(job.state)  # Job.wait set it when the Experiment's exit waited for the job
    print(f"\n[recipes] job finished in {time.monotonic() - t0:.1f} s with state {state}")
    print_summary(args, job_dir, progress.device)
    if interrupted():
        print(
            f"[recipes] stopped by {STOP_SIGNALS[interrupted()]}; the job's logs are under {job_dir}", file=sys.stderr
        )
        return 128 + interrupted()
    ok = "SUCCEEDED" in state
    if not ok:
        tail = "\n".join(f"  {line}" for line in log_tail(job_dir))
        print(
            f"[recipes] the job did not succeed; the end of its log:\n{tail}\nall its logs are under {job_dir}",
            file=sys.stderr,
        )
    return 0 if ok else 1


def run_main(entry=main) -> None:
    """Run ``entry`` and exit with its code. A Ctrl-C before the launch, after the job or a second
    one (outside cancel_on_ctrl_c's first) is one line and exit 130."""
    from bridge_plugins.cli.ctrl_c import caused_by_ctrl_c
    from recipes.ctrl_c import exit_interrupted, exit_on_ctrl_c
    from recipes.python_check import missing_dependency_line

    exit_on_ctrl_c()
    try:
        code = entry()
    except ModuleNotFoundError as e:  # not the venv's Python: one line, not the import's traceback
        line = missing_dependency_line(e, "recipes")
        if line is None:
            raise
        print(line, file=sys.stderr)
        code = 1
    except (KeyboardInterrupt, Exception) as e:
        if not caused_by_ctrl_c(e):
            raise
        logging.shutdown()
        # Not sys.exit: when the KeyboardInterrupt left code run by exec(str) (dataclasses build
        # their methods so), CPython flags it as unhandled and a ``python -m`` program then dies by
        # SIGINT (exit -2) after any sys.exit.
        exit_interrupted()
    sys.exit(code)


if __name__ == "__main__":
    run_main()
