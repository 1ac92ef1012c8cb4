"""A read in ranges with its pieces claimed (trace/range_runs.py) against the same read with none to
claim (one piece a range: the split fixed in advance), side by side, when one of its two processes
gets half a core: a CPU hog shares the worker's core, or this process's, or none.

Each run is ``summary FILE`` in a fresh process started through this module (``--child``), which
pins this process to core 0 while it reads its range and the worker to core 1 (the hog, started
here, is pinned to one of them), and with ``--fixed`` makes every range one piece. The split is
forced (``BRIDGE_PLUGINS_SPLIT=always``: the plan would not split beside a hog). Every round runs
every case once, alternating; a figure is the median of the rounds, and the ratio fixed / claimed
is taken between medians. Needs 2 usable cores. Example (benchmarks/results/balance_cpu.txt):

    .venv/bin/python -m benchmarks.balance /tmp/speed-bench/job128_rank0-*/263mb/rank0.json.gz --rounds 5
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HOGS = {"no hog": None, "hog on the worker's core": 1, "hog on this process's core": 0}


def _child(argv: list[str]) -> int:
    """``summary`` of ``argv``, pinned as the module doc says; ``--fixed`` first: no pieces to claim."""
    from bridge_plugins.analysis.trace import range_runs, read_ranges
    from bridge_plugins.cli import main

    if argv[:1] == ["--fixed"]:
        argv = argv[1:]
        range_runs.PIECE_BYTES = 1 << 62
    read_runs, finish = range_runs.read_runs, read_ranges.Ranges.finish

    def pinned_read_runs(open_stream, first, own, *rest):  # type: ignore[no-untyped-def]
        if own:  # a worker (forked with this module's patches)
            os.sched_setaffinity(0, {1})
        return read_runs(open_stream, first, own, *rest)

    def pinned_finish(self, c):  # type: ignore[no-untyped-def]
        os.sched_setaffinity(0, {0})
        try:
            return finish(self, c)
        finally:
            os.sched_setaffinity(0, {0, 1})  # the analyses take both cores again

    range_runs.read_runs = pinned_read_runs  # type: ignore[assignment]
    read_ranges.Ranges.finish = pinned_finish  # type: ignore[method-assign]
    return main(["summary", *argv])


def _run(trace: Path, fixed: bool) -> float:
    env = dict(os.environ, BRIDGE_PLUGINS_SPLIT="always", OPENBLAS_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "benchmarks.balance", "--child", *(["--fixed"] if fixed else []), str(trace)]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=REPO, env=env)
    return time.perf_counter() - t0


def _hog(core: int | None) -> subprocess.Popen | None:
    if core is None:
        return None
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    os.sched_setaffinity(hog.pid, {core})
    return hog


def main() -> int:
    if sys.argv[1:2] == ["--child"]:
        return _child(sys.argv[2:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace", type=Path)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        raise SystemExit("needs 2 usable cores")
    compileall.compile_dir(REPO / "bridge_plugins", quiet=1)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO)
    print(f"# python -m benchmarks.balance {' '.join(sys.argv[1:])}")
    print(f"# at {commit.stdout.strip()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"# {args.trace}: {args.trace.stat().st_size / 1e6:.1f} MB on disk")
    times: dict[tuple[str, bool], list[float]] = {}
    for r in range(args.rounds):
        for name, core in HOGS.items():
            hog = _hog(core)
            try:
                for fixed in (r % 2 == 0, r % 2 == 1):  # which goes first alternates
                    times.setdefault((name, fixed), []).append(_run(args.trace, fixed))
            finally:
                if hog is not None:
                    hog.kill()
                    hog.wait()
        print(
            f"  round {r + 1}: " + ", ".join(f"{n}{' fixed' if f else ''} {t[-1]:.2f}s" for (n, f), t in times.items())
        )
    print(f"\n{'case':<28} {'claimed (median)':>17} {'fixed (median)':>15} {'fixed / claimed':>16}")
    for name in HOGS:
        claimed, fixed = (statistics.median(times[name, f]) for f in (False, True))
        print(f"{name:<28} {claimed:>15.2f} s {fixed:>13.2f} s {fixed / claimed:>16.2f}")
    print(f"# load average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
