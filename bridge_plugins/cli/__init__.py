"""The ``bridge-plugins`` command (also ``python -m bridge_plugins``).

Each subcommand is one module in this package with ``add_parser(subparsers)`` and
``run(args) -> int`` (``add_parser`` calls ``set_defaults(run=run)``); ``SUBCOMMANDS`` lists
them, so adding one is a file plus a line. Readers
(summary, compare, memory, report) only read artifacts; ``trigger`` writes a request file that a
running job picks up. None of them import nemo_run or the runtime's backends.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import sys
from typing import NoReturn

import bridge_plugins
from bridge_plugins.analysis import cpu_idle, heap  # noqa: F401  # cpu_idle: its first sample, as the command starts (split_plan.py)
from bridge_plugins.analysis.errors import AnalysisInputError
from bridge_plugins.analysis.parallel import ClusterUnavailable, Workers, usable_cpus
from bridge_plugins.cli.ctrl_c import caused_by_ctrl_c
from bridge_plugins.cli.suggest import SuggestingParser
from bridge_plugins.config.errors import BridgePluginsError

SUBCOMMANDS = ["summary", "diagnose", "compare", "memory", "report", "trigger"]
"""Each is bridge_plugins/cli/<name>.py."""


class UsageError(BridgePluginsError):
    """Bad input (a missing file, a trace that is not JSON...): printed as one line, exit code 2."""


PATH_HELP = (
    "a job directory, or trace (.json, .json.gz, nsys .nsys-rep and .sqlite) and memory snapshot (.pickle) files"
)
"""What every reader's PATH is (summary, diagnose, report and memory say it alike)."""


def add_paths(parser: argparse.ArgumentParser, nargs: str | None = "+", help: str = PATH_HELP) -> None:
    """The readers' positional ``PATH`` arguments, as ``args.paths``."""
    parser.add_argument("paths", nargs=nargs, metavar="PATH", help=help)


def add_json(parser: argparse.ArgumentParser, what: str, fields: str) -> None:
    """``--json``: ``what`` is printed, and ``fields`` is the docs page that says what each field means."""
    parser.add_argument("--json", action="store_true", help=f"print {what} as JSON (the fields: {fields})")


def add_top(parser: argparse.ArgumentParser, help: str) -> None:
    """``--top N``, the rows per table of summary, compare and report; see ``top_rows``."""
    parser.add_argument("--top", type=int, default=10, metavar="N", help=f"{help} (default 10)")


def top_rows(args: argparse.Namespace) -> int:
    """``--top``, checked: a positive number of rows."""
    if args.top < 1:
        raise UsageError(f"--top {args.top}: give a positive number of rows")
    return args.top


def add_workers(parser: argparse.ArgumentParser) -> None:
    """``--jobs N`` and ``--ray [ADDRESS]``: where traces are read (summary, compare, report, diagnose);
    see ``workers`` and bridge_plugins.analysis.parallel."""

    group = parser.add_argument_group("reading many traces")
    group.add_argument(
        "-j",
        "--jobs",
        type=int,
        metavar="N",
        help="read N traces at a time in parallel processes, or a single trace split over N (default: the CPUs "
        "this process may use); the output is the same for every N",
    )
    group.add_argument(
        "--ray",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help="read the traces on a Ray cluster instead: ray://HEAD:10001 from outside it, HEAD:6379 or 'auto' on "
        "one of its nodes (default: $RAY_ADDRESS, else 'auto'). The cluster must see the files at the same "
        "paths. Without --ray, a set RAY_ADDRESS means Ray too, unless --jobs is given",
    )


def workers(args: argparse.Namespace):
    """The ``Workers`` that ``--jobs``/``--ray`` (and ``RAY_ADDRESS``) ask for, checked."""
    import os

    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs}: give a positive number of processes")
    env = os.environ.get("RAY_ADDRESS", "").strip()
    label = f"bridge-plugins {args.command}"
    if args.ray is not None:
        if args.jobs is not None:
            raise UsageError("--jobs and --ray: give one (--jobs reads here, --ray on a Ray cluster)")
        return Workers(ray_address=args.ray.strip() or env or "auto", label=label)
    if env and args.jobs is None:
        return Workers(ray_address=env, label=label)
    return Workers(jobs=args.jobs or usable_cpus(), label=label)


class _Version(argparse.Action):
    """``--version``, read from the installed metadata only when asked (that import costs every
    command ~10 ms)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(f"{parser.prog} {bridge_plugins.__version__}")
        parser.exit()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command's parser: every subcommand's, or only ``command``'s (the one the arguments name:
    the other modules are not imported, and a lone trace's read starts ~20 ms sooner)."""
    parser = SuggestingParser(
        prog="bridge-plugins", description="Read and steer the profiles that bridge-plugins takes."
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in SUBCOMMANDS:
        if command in (None, name):
            importlib.import_module(f"bridge_plugins.cli.{name}").add_parser(sub)
    return parser


def named_command(argv: list[str]) -> str | None:
    """The subcommand ``argv`` starts with; None for anything else (help, --version, a typo), which
    the whole parser answers."""
    return argv[0] if argv and argv[0] in SUBCOMMANDS else None


def main(argv: list[str] | None = None) -> int:
    # numpy's OpenBLAS starts a thread per core on import (~0.1 s of a short command); no analysis multiplies matrices
    import os

    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    heap.own_this_process()  # this process is ours: the analyses may tune its allocator (analysis/heap.py)
    try:
        argv = sys.argv[1:] if argv is None else argv
        args = build_parser(named_command(argv)).parse_args(argv)
        return int(args.run(args) or 0)
    except (UsageError, ClusterUnavailable, AnalysisInputError) as e:  # AnalysisInputError: a trace or snapshot
        print(f"bridge-plugins {args.command}: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `bridge-plugins summary DIR | head`: the reader left, which is fine
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
    except (KeyboardInterrupt, Exception) as e:
        if caused_by_ctrl_c(e):  # Ctrl-C: exit 130, no traceback
            return 130
        raise


_GC_HELD = False
"""Whether this process's collector is off until the command's modules are imported (run_and_exit)."""


def analysis_starts() -> None:
    """The command's modules are imported and its analysis starts: in the command's own process
    (:func:`run_and_exit`), the collector, off while they were imported, is turned back on, with what
    they built frozen (``gc.freeze``: no collection walks it again, nor copies its pages in a forked
    child). Elsewhere (tests calling :func:`main`, a user's session) nothing changes."""
    global _GC_HELD
    if _GC_HELD:
        _GC_HELD = False
        gc.freeze()
        gc.enable()


def run_and_exit() -> NoReturn:
    """The ``bridge-plugins`` command as a process runs it: :func:`main`, then exit. What is still
    alive is frozen first (``gc.freeze``), so the interpreter's last collections skip it: after a
    big summary they walk every object it built, ~30 ms of a ~1.3 s command (docs/scale.md). Only
    here, where the process ends: tests call :func:`main` in their own process. The collector is off
    while the command imports its modules (~8 ms of collections walking what they built, on the
    critical path of a lone trace's read): :func:`analysis_starts` turns it back on."""
    global _GC_HELD
    gc.disable()
    _GC_HELD = True
    try:
        code = main()
    finally:
        analysis_starts()  # a command that never called it: on again, before the last collections
    gc.freeze()
    sys.exit(code)
