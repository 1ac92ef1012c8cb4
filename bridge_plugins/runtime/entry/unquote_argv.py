"""Start a Python job with its arguments exactly as the task wrote them, where NeMo Run alters them.

On LocalExecutor nothing but this can fix two things NeMo Run 0.11.1 does to a run.Script's argv,
which Megatron Bridge's override parser rejects (the job would die at start-up):

* ``--quoted``: its torchrun and ft_launcher components ``shlex.quote`` every argument for a shell,
  and LocalExecutor starts torchrun without one, so ``'profiling.profile_ranks=[0,1]'`` arrives
  quotes and all. Each argument that ``shlex.quote`` wrote is unquoted once.
* ``--nsys-postfix``: under nsys it appends an empty argument to the command line. An empty last
  argument is dropped.

A plugin routes such a run.Script through this file, which is run by path (it imports nothing of
ours; this directory is ``sys.path[0]`` until the job's own is set, so stdlib only):

    unquote_argv.py [--quoted] [--nsys-postfix] -m MODULE ARGS...   like python -m MODULE ARGS...
    unquote_argv.py [--quoted] [--nsys-postfix] PATH ARGS...        like python PATH ARGS...

The job then runs with ``sys.argv``, ``sys.path[0]`` and ``__name__`` as Python would have set them.
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
