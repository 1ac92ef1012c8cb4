"""``summary --json`` of two checkouts on one trace, side by side with ``gzip -dc`` (issue 18 point 4).

Each round runs ``gzip -dc FILE``, then the two checkouts in turn (the order alternates by round),
each in a fresh process (its own CPU time from wait4), and prints the times and the ratios to gzip
and between the two; then the medians and the load average. A shared machine's load changes from
second to second, so only ratios within a round mean something. Both checkouts' modules are
compiled first, as ``pip install`` does (a checkout run with PYTHONDONTWRITEBYTECODE would
compile them in every run). Checkouts: ``git worktree add --detach DIR COMMIT``. Example (the figures in benchmarks/results/analysis_speed_memory_cpu.txt):

    nice .venv/bin/python -m benchmarks.summary_side_by_side /tmp/bench/rank0.json.gz \\
        --before /tmp/base --after . --rounds 8
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def timed(cmd: list[str], cwd: str | None = None, pythonpath: str | None = None) -> tuple[float, float]:
    """(wall s, user + system CPU s) of ``cmd``, its output dropped."""
    env = dict(os.environ, **({"PYTHONPATH": pythonpath} if pythonpath else {}))
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, cwd=cwd, env=env)
    _, status, usage = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return time.perf_counter() - t0, usage.ru_utime + usage.ru_stime


def summary(checkout: str, trace: str) -> tuple[float, float]:
    # cwd too: ``python -m`` puts the current directory before PYTHONPATH on sys.path
    return timed([sys.executable, "-m", "bridge_plugins", "summary", trace, "--json"], checkout, checkout)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("trace", help="a gzipped trace")
    ap.add_argument("--before", required=True, help="checkout of the earlier commit")
    ap.add_argument("--after", required=True, help="checkout of the later commit")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    trace, before, after = (
        str(Path(args.trace).resolve()),
        str(Path(args.before).resolve()),
        str(Path(args.after).resolve()),
    )
    for checkout in (before, after):
        subprocess.run([sys.executable, "-m", "compileall", "-q", f"{checkout}/bridge_plugins"], check=True)
    rows: dict[str, list[tuple[float, float]]] = {"gzip": [], "before": [], "after": []}
    print(
        f"{'round':>5} {'gzip s/cpu':>11} {'before s/cpu':>13} {'after s/cpu':>12} "
        f"{'before/gzip':>12} {'after/gzip':>11} {'after/before':>13}  (wall; cpu)"
    )
    for r in range(args.rounds):
        rows["gzip"].append(timed(["gzip", "-dc", trace]))
        for name in ("before", "after") if r % 2 == 0 else ("after", "before"):
            rows[name].append(summary(before if name == "before" else after, trace))
        (gw, gc), (bw, bc), (aw, ac) = (rows[k][-1] for k in ("gzip", "before", "after"))
        print(
            f"{r + 1:>5} {gw:5.2f}/{gc:4.2f} {bw:7.2f}/{bc:4.2f} {aw:6.2f}/{ac:4.2f} "
            f"{bw / gw:6.2f};{bc / gc:4.2f} {aw / gw:5.2f};{ac / gc:4.2f} {aw / bw:7.2f};{ac / bc:4.2f}",
            flush=True,
        )

    def median_ratio(a: str, b: str, i: int) -> float:
        return statistics.median(x[i] / y[i] for x, y in zip(rows[a], rows[b], strict=True))

    for a, b in (("before", "gzip"), ("after", "gzip"), ("after", "before")):
        print(f"median {a}/{b}: {median_ratio(a, b, 0):.2f}x wall, {median_ratio(a, b, 1):.2f}x CPU")
    print("load average (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
