"""Run a Python job with the arguments NeMo Run shell-quoted, but no shell read, unquoted.

NeMo Run 0.11.1's torchrun and ft_launcher components ``shlex.quote`` every script argument for
a shell, and LocalExecutor starts torchrun without one, so the job's ``sys.argv`` holds
``'profiling.profile_ranks=[0,1]'`` quotes and all, which Megatron Bridge's parser rejects. A
plugin routes such a run.Script through this file (run by path, so it needs no import of ours):

    unquote_argv.py -m MODULE ARGS...      like python -m MODULE ARGS...
    unquote_argv.py PATH ARGS...           like python PATH ARGS...
    unquote_argv.py --exec PATH ARGS...    like running the executable PATH ARGS...

Every argument (MODULE and PATH too) is one shell word as ``shlex.quote`` writes it, or the empty
argument NeMo Run appends after nsys; it is unquoted once and the job runs with ``sys.argv`` and
``sys.path[0]`` as Python would have set them. Stdlib only: this directory is ``sys.path[0]``
until the job's own is set.
"""

import os
import runpy
import shlex
import sys


def unquoted(arg: str) -> str:
    """``arg`` as it was before ``shlex.quote``; SystemExit for anything shlex.quote cannot produce."""
    if arg == "":
        return arg
    words = shlex.split(arg)
    if len(words) != 1:
        raise SystemExit(f"unquote_argv: {arg!r} is not one shell-quoted argument; run the job without this wrapper")
    return words[0]


def main(argv: list) -> None:
    args = [unquoted(a) for a in argv]
    if len(args) >= 2 and args[0] == "-m":
        sys.argv = [args[1], *args[2:]]
        sys.path[0] = os.getcwd()
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    elif len(args) >= 2 and args[0] == "--exec":
        os.execv(args[1], args[1:])
    elif args:
        sys.argv = args
        sys.path[0] = os.path.dirname(os.path.realpath(args[0]))
        runpy.run_path(args[0], run_name="__main__")
    else:
        raise SystemExit("usage: unquote_argv.py [-m MODULE | --exec PATH | PATH] ARGS...")


if __name__ == "__main__":
    main(sys.argv[1:])
