"""Keep kineto's ``USDT:... profiler_start`` / ``profiler_stop`` markers off the terminal of a
training job started by hand (``python -m recipes.train``, ``torchrun -m recipes.train``).

kineto writes them from C++ straight to fd 2, and ``KINETO_LOG_LEVEL=6`` would also silence its
warnings, so fd 2 goes through a small filter process that drops exactly those lines. A process,
not a thread: the kernel closes our end of the pipe however this process ends, so the filter
always writes out the last lines (a traceback too); it ignores SIGINT and SIGTERM so the job's
last words get through. If it cannot start, stderr is left as it was.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys

_FILTER = r"""
import signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.path.insert(0, sys.argv[1])
from recipes.job_output import is_kineto_marker
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    if not is_kineto_marker(line.decode("utf-8", "replace")):
        out.write(line)
        out.flush()
"""

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def filter_kineto_markers() -> None:
    """Route this process's fd 2 (and its children's) through the marker filter."""
    try:
        original = os.dup(2)
        child = subprocess.Popen([sys.executable, "-S", "-c", _FILTER, _REPO], stdin=subprocess.PIPE, stdout=original)
    except OSError:
        return
    sys.stderr.flush()
    os.dup2(child.stdin.fileno(), 2)
    child.stdin.close()

    def drain() -> None:  # at a normal exit, let the filter write everything before the shell prompt returns
        try:
            sys.stderr.flush()
            os.dup2(original, 2)  # our last reference to the pipe: the filter reads end-of-file
            child.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass

    atexit.register(drain)
