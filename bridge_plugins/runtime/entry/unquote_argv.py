"""Start a Python job with its arguments exactly as the task wrote them, where NeMo Run alters them.

On LocalExecutor NeMo Run 0.11.1 shell-quotes a run.Script's arguments with no shell to unquote
them (``--quoted``) and under nsys appends an empty one (``--nsys-postfix``); Megatron Bridge's
parser rejects both. Run by path, standard library only, as
``unquote_argv.py [--quoted] [--nsys-postfix] (-m MODULE | PATH) ARGS...``; the job then sees the
``sys.argv``, ``sys.path[0]`` and ``__name__`` Python would have set. Details: docs/formats.md.
"""

import os
import runpy
import shlex
import sys

OPTIONS = ("--quoted", "--nsys-postfix")


def unquoted(arg: str) -> str:
    """``arg`` before ``shlex.quote``; an arg that ``shlex.quote`` did not write is left as it is
    (``exp.run(direct=True)`` starts the same command through a shell, which has unquoted it)."""
    try:
        words = shlex.split(arg)
    except ValueError:
        return arg
    return words[0] if len(words) == 1 and shlex.quote(words[0]) == arg else arg


def job_args(argv: list) -> list:
    """The command line (``-m MODULE ...`` or ``PATH ...``) with NeMo Run's changes undone."""
    options = []
    while argv and argv[0] in OPTIONS:
        options.append(argv.pop(0))
    if "--nsys-postfix" in options and argv and argv[-1] == "":  # absent when run directly, without nsys
        argv = argv[:-1]
    return [unquoted(a) for a in argv] if "--quoted" in options else list(argv)


def main(argv: list) -> None:
    args = job_args(list(argv))
    if len(args) >= 2 and args[0] == "-m":
        sys.argv = [args[1], *args[2:]]
        sys.path[0] = os.getcwd()
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    elif args and args[0] != "-m":
        sys.argv = args
        sys.path[0] = os.path.dirname(os.path.realpath(args[0]))
        runpy.run_path(args[0], run_name="__main__")
    else:
        raise SystemExit("usage: unquote_argv.py [--quoted] [--nsys-postfix] (-m MODULE | PATH) ARGS...")


if __name__ == "__main__":
    main(sys.argv[1:])
