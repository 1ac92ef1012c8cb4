"""Every figure issue 18 names, in one run, against its goal: ``--jobs N`` over ``--jobs 1`` on 16
traces, a 2-node Ray cluster over ``--jobs 1`` on the same files, peak RSS of ``summary`` on a 1 GB
and a 3 GB trace, and ``summary`` against ``gzip -dc`` on a 200 MB trace (in one process, and split over every core).

The parts are the other benchmarks' (``analysis_parallel.measure``, ``analysis_scale.run_ours`` and
``gzip_ratio``), run back to back; each prints its own table, then this prints the goals. The
Ray part needs the local Slurm cluster (scripts/slurm/up.sh); ``--no-ray`` leaves it out. The big
traces are built once in ``--work`` (4 GB of disk) and reused. On an idle machine:

    .venv/bin/python -m benchmarks.scale_goals --work /tmp/scale_goals
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from benchmarks import analysis_parallel
from benchmarks.analysis_scale import build, gzip_ratio, run_ours

RSS_GOAL_MB = 250
GZIP_GOAL = 2.0


def _trace(work: Path, mb: float) -> Path:
    """The synthetic trace of ``mb`` MB in ``work``, built unless a big enough one is there."""
    d = work / f"size{int(mb)}"
    d.mkdir(parents=True, exist_ok=True)
    path = d / "rank0.json"
    if not path.exists() or path.stat().st_size < mb * 1e6:
        build(path, mb)
    return path


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", type=Path, default=Path("/tmp/bridge_scale_goals"), help="where the traces are built")
    p.add_argument("--parallel-mb", type=float, default=20, help="size of each of the 16 traces (MB of JSON)")
    p.add_argument("--rounds", type=int, default=3, help="rounds of the --jobs/--ray comparison")
    p.add_argument("--gzip-rounds", type=int, default=5, help="rounds of the gzip -dc comparison")
    p.add_argument("--rss-sizes-mb", type=float, nargs="+", default=[1000, 3000])
    p.add_argument("--gzip-mb", type=float, default=200)
    p.add_argument("--no-ray", action="store_true", help="leave out the 2-node Ray cluster (it needs Slurm)")
    args = p.parse_args()
    cpus = len(os.sched_getaffinity(0))
    start = time.perf_counter()
    print(f"# python -m benchmarks.scale_goals {' '.join(sys.argv[1:])}")

    print(f"\n## --jobs {cpus} and --ray over --jobs 1, 16 traces")
    speedups = analysis_parallel.measure(args.parallel_mb, [1, cpus], args.rounds, not args.no_ray)

    print(
        "\n## peak RSS of summary --json (the default: the trace split over every core; from wait4, the largest of its processes)"
    )
    rss = {}
    for mb in args.rss_sizes_mb:
        path = _trace(args.work, mb)
        wall, peak, _ = run_ours(path)
        rss[mb] = peak / 1e6
        print(f"{path.stat().st_size / 1e6:8.0f} MB trace: {wall:6.1f} s, peak RSS {peak / 1e6:5.0f} MB", flush=True)

    print(f"\n## summary against gzip -dc, {args.gzip_rounds} rounds")
    ratios = gzip_ratio(_trace(args.work, args.gzip_mb), args.gzip_rounds)

    jobs_goal = 0.7 * min(cpus, analysis_parallel.TRACES)
    rows = [
        (f"--jobs {cpus} over --jobs 1, 16 traces", f"{speedups[f'--jobs {cpus}']:.2f}x", f">= {jobs_goal:.2f}x"),
    ]
    if not args.no_ray:
        rows.append(("--ray (2 nodes) over --jobs 1, 16 traces", f"{speedups[analysis_parallel.RAY]:.2f}x", "-"))
    rows += [(f"peak RSS, {mb / 1000:g} GB trace", f"{v:.0f} MB", f"< {RSS_GOAL_MB} MB") for mb, v in rss.items()]
    for name, (wall_x, cpu_x) in ratios.items():
        rows.append((f"summary ({name}) / gzip -dc, wall (CPU)", f"{wall_x:.2f}x ({cpu_x:.2f}x)", f"<= {GZIP_GOAL:g}x"))
    met = [
        speedups[f"--jobs {cpus}"] >= jobs_goal,
        *(v < RSS_GOAL_MB for v in rss.values()),
        *(wall_x <= GZIP_GOAL for wall_x, _ in ratios.values()),
    ]
    print(f"\n## issue 18's figures ({cpus} usable CPUs, load average {os.getloadavg()[0]:.1f} at the end)")
    print(f"{'figure':<42} {'measured':>16} {'goal':>10}")
    for figure, value, goal in rows:
        print(f"{figure:<42} {value:>16} {goal:>10}")
    print(f"goals met: {sum(met)} of {len(met)}; {time.perf_counter() - start:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
