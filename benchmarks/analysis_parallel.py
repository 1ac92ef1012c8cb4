"""`summary` over 16 traces: --jobs N against --jobs 1, and a 2-node Ray cluster against --jobs 1 (issue 18).

Builds one synthetic trace of ``--mb`` MB (the real job2 fixture's events repeated, as in
``analysis_scale``) and gives it 16 names (hard links: the work is parsing, which the page cache
does not save). Then, in fresh processes, interleaved per round so that machine load hits every
variant alike: ``python -m bridge_plugins summary --json FILES --jobs N`` for N in ``--jobs``
(1 first), and with ``--ray-on-slurm`` the same files through ``--ray`` on a 2-node Ray cluster
started by NeMo Run's RayCluster on the local Slurm cluster (tests/ray_support.py; needs
scripts/slurm/up.sh). Prints the median wall time per variant, the speed-up over --jobs 1 and
the goal 0.7 x min(N, 16), and checks that every variant printed the same bytes.

    nice .venv/bin/python -m benchmarks.analysis_parallel --mb 20 --jobs 1 2 --rounds 3 [--ray-on-slurm]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.analysis_scale import build

TRACES = 16
RAY = "--ray (2 nodes)"


def timed(args: list[str], env: dict[str, str] | None = None) -> tuple[float, bytes]:
    """(wall s, stdout) of ``python -m bridge_plugins ARGS`` in a fresh process."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    environ.update(env or {})
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "bridge_plugins", *args], capture_output=True, env=environ)
    wall = time.perf_counter() - t0
    if proc.returncode != 0 or proc.stderr.strip():
        raise SystemExit(f"{' '.join(args)} failed:\n{proc.stderr.decode(errors='replace')[-2000:]}")
    return wall, proc.stdout


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mb", type=float, default=20, help="size of each trace, MB of JSON (default 20)")
    p.add_argument("--jobs", type=int, nargs="+", default=[1, 2], help="--jobs values to time (1 is always added)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--ray-on-slurm", action="store_true", help="also time --ray on a 2-node Ray cluster on Slurm")
    args = p.parse_args()
    print(f"# python -m benchmarks.analysis_parallel {' '.join(sys.argv[1:])}")
    measure(args.mb, args.jobs, args.rounds, args.ray_on_slurm)


def measure(mb: float, jobs_values: list[int], rounds: int, ray_on_slurm: bool) -> dict[str, float]:
    """Run the comparison (see the module doc), print its table, and return each variant's
    speed-up over --jobs 1 (the median of the per-round ratios), by variant name."""
    jobs = sorted(set(jobs_values) | {1})
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, "
        f"{len(os.sched_getaffinity(0))} usable CPUs, load average {os.getloadavg()[0]:.1f} at the start "
        f"(the machine is shared with other jobs), Python {platform.python_version()}"
    )
    work = Path(tempfile.mkdtemp(prefix="parallel_"))
    first = work / "rank0.json"
    size = build(first, mb)
    files = [first]
    for r in range(1, TRACES):
        os.link(first, work / f"rank{r}.json")
        files.append(work / f"rank{r}.json")
    print(f"{TRACES} traces of {size / 1e6:.1f} MB (JSON) each, {TRACES * size / 1e9:.2f} GB in all")
    variants: dict[str, tuple[list[str], dict[str, str]]] = {f"--jobs {n}": (["--jobs", str(n)], {}) for n in jobs}
    cluster = None
    if ray_on_slurm:
        from tests import ray_support

        t0 = time.perf_counter()
        cluster = ray_support.start(work / "ray", {"account": "bridge", "partition": "debug"})
        print(
            f"Ray cluster of 2 nodes up in {time.perf_counter() - t0:.0f} s at {cluster.address} (NeMo Run RayCluster, Slurm)"
        )
        variants[RAY] = (["--ray", cluster.address], ray_support.auth_env(cluster.temp_dir))
    walls: dict[str, list[float]] = {k: [] for k in variants}
    outputs: dict[str, bytes] = {}
    try:
        for _ in range(rounds):
            for name, (flags, env) in variants.items():
                wall, out = timed(["summary", "--json", *map(str, files), *flags], env)
                walls[name].append(wall)
                outputs.setdefault(name, out)
                if outputs[name] != out or out != outputs["--jobs 1"]:
                    raise SystemExit(f"{name}: its output differs from --jobs 1")
    finally:
        if cluster is not None:
            left = ray_support.stop(cluster)
            print(f"Ray cluster stopped (Slurm job cancelled){'; killed left-overs ' + str(left) if left else ''}")
    base = statistics.median(walls["--jobs 1"])
    print(
        "speed-up = --jobs 1 / variant: of the medians, and the median of the per-round ratios (each round runs "
        "every variant back to back, so a round's ratio sees the same machine load)"
    )
    print(f"{'variant':<16} {'median s':>9}  {'rounds (s)':<40} {'of medians':>10} {'per round':>9} {'goal':>5}")
    speedups = {}
    for name, ws in walls.items():
        n = int(name.split()[1]) if name.startswith("--jobs") else None
        goal = f"{0.7 * min(n, TRACES):.2f}" if n else "-"
        speedups[name] = paired = statistics.median(a / b for a, b in zip(walls["--jobs 1"], ws, strict=True))
        print(
            f"{name:<16} {statistics.median(ws):>9.2f}  {' '.join(f'{w:.1f}' for w in ws):<40} "
            f"{base / statistics.median(ws):>10.2f} {paired:>9.2f} {goal:>5}"
        )
    print("every variant printed the same bytes as --jobs 1 in every round")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    shutil.rmtree(work, ignore_errors=True)
    return speedups


if __name__ == "__main__":
    main()
