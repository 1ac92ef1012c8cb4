"""Time and peak RSS of `bridge-plugins summary` on each hostile trace (issue 19 point 1), against a
normal trace of the same uncompressed size.

The hostile files are tests/analysis/hostile_inputs.py's cases (the tests check their outcomes).
The normal time for a size is interpolated linearly between two normal traces measured in the same
run: the real job2 fixture (10 MB) and a synthetic one repeating it (``--normal-mb``, built by
benchmarks.analysis_scale). The goal: every case within 2x that time, under 300 MB, with a result
or a one-line error. Run with nice:

    nice .venv/bin/python -m benchmarks.hostile_traces [--skip-big] [--work DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks.analysis_scale import build
from tests.analysis.hostile_inputs import CASES, JOB2, run_summary, uncompressed_size


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default="/tmp/bridge_hostile_bench")
    ap.add_argument("--normal-mb", type=float, default=1000)
    ap.add_argument("--skip-big", action="store_true")
    ap.add_argument("--jobs", type=int, help="summary --jobs N for every file (default: summary's own default)")
    args = ap.parse_args()
    command = ("summary",) if args.jobs is None else ("summary", "--jobs", str(args.jobs))
    print(f"# bridge-plugins {' '.join(command)} FILE --json")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    normal = work / f"normal{int(args.normal_mb)}.json"
    if not normal.exists() or normal.stat().st_size < args.normal_mb * 1e6:
        build(normal, args.normal_mb)
    points = []
    for path in (JOB2, normal):
        run = run_summary(path, command=command)
        assert run.returncode == 0, run.stderr
        points.append((uncompressed_size(path), run.wall_s, run.cpu_s))
    (s0, t0, c0), (s1, t1, c1) = points
    print(
        f"normal traces: {s0 / 1e6:.0f} MB in {t0:.1f} s ({c0:.1f} s CPU), "
        f"{s1 / 1e6:.0f} MB in {t1:.1f} s ({c1:.1f} s CPU) (same run)"
    )

    def normal_time(size: int) -> float:
        return t0 + (t1 - t0) * (size - s0) / (s1 - s0)

    print(
        f"| {'case':<44} | {'on disk':>9} | {'JSON':>9} | {'time s':>7} | {'CPU s':>6} | {'normal s':>8} | "
        f"{'ratio':>5} | {'RSS MB':>6} | result"
    )
    print(f"|{'-' * 46}|{'-' * 10}:|{'-' * 10}:|{'-' * 8}:|{'-' * 7}:|{'-' * 9}:|{'-' * 6}:|{'-' * 7}:|---")
    worst = 0.0
    for case in CASES:
        if case.big and args.skip_big:
            continue
        path = case.build(work)
        size = uncompressed_size(path)
        run = run_summary(path, command=command)
        lines = run.stderr.strip().splitlines()
        if run.returncode == 0:
            outcome = "result"
        else:
            outcome = f"exit {run.returncode}, {len(lines)} line(s): " + (lines[-1].split(": ", 2)[-1] if lines else "")
        ratio = run.wall_s / max(normal_time(size), t0)
        worst = max(worst, ratio)
        print(
            f"| {case.what:<44} | {_mb(path.stat().st_size):>9} | {_mb(size):>9} | {run.wall_s:7.1f} | "
            f"{run.cpu_s:6.1f} | {max(normal_time(size), t0):8.1f} | {ratio:5.2f} | {run.peak_rss / 1e6:6.0f} | {outcome[:90]}",
            flush=True,
        )
        path.unlink()
    print(f"worst time ratio to a normal trace of the same size: {worst:.2f}")
    return 0


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 1e5 else f"{n / 1e3:,.0f} kB"


if __name__ == "__main__":
    sys.exit(main())
