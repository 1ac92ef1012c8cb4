"""``python -m recipes``'s flags: the parser (its ``--help`` is the command-line reference's
page), ``--ranks``'s reading and the checks across flags, each error one line."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

DESCRIPTION = """The main job: run the tiny GPT recipe through NeMo Run with a profiling plugin, then report.

    python -m recipes                                  # LocalExecutor, torchrun, 2 CPU ranks,
                                                       # PyTorch profiler on steps 10-14 of rank 0
    python -m recipes --profiler nsys --dryrun         # print the launch command, run nothing
    python -m recipes --executor slurm --account bridge --partition debug

Then it prints the steps captured, every artifact per rank, the summary, and the HTML report's path.
Ctrl-C stops the job and still prints what it captured (exit 130). Started with `&` in a script,
it ignores Ctrl-C, as the shell asks of a background command: stop it with `kill PID` (SIGTERM,
the same stop, exit 143).
"""

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
        prog="python -m recipes", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
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
