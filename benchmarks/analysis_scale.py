"""Scale of `bridge-plugins summary` on big traces, against HTA (issue 10, item 5).

Builds synthetic single-rank traces by repeating the real job2 fixture's events (40k events, three
ProfilerSteps) with shifted timestamps, correlation ids and step numbers, so each copy is three
more steps of the same job. Then, on files of equal size, runs in fresh processes:

- ours: ``python -m bridge_plugins summary FILE --json`` (peak RSS from wait4, exact);
- HTA: ``TraceAnalysis(trace_dir, include_last_profiler_step=True)`` + ``get_temporal_breakdown``
  (peak RSS summed over its process tree, sampled every 0.1 s: HTA parses in worker processes).

Ours also runs alone on the largest files (1 GB and 3 GB: peak RSS, issue 18 point 3). HTA only up
to --hta-max-mb, as its memory needs many times the file size. ``--gzip-ratio-mb 200`` adds
``summary`` against ``gzip -dc`` on the gzip of a 200 MB trace, side by side (issue 18 point 4).
Needs scripts/install_hta.sh. Run it with nice:

    nice .venv/bin/python -m benchmarks.analysis_scale --sizes-mb 100 1000 3000 --hta-max-mb 100 --gzip-ratio-mb 200
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from benchmarks.mix_traces import GPU_TRACES, build_many

FIXTURE = GPU_TRACES / "job2_rank0.json.gz"


def build(path: Path, target_mb: float) -> int:
    """Write a trace of at least ``target_mb`` MB (uncompressed) of job2's mix; returns its size in bytes."""
    return build_many(FIXTURE, {path: target_mb})[path]


def run_ours(path: Path):
    """(wall s, peak RSS bytes, the summary's GPU breakdown) of ``summary --json`` with its defaults.
    The RSS is the largest of the command's processes (wait4's ru_maxrss: the driver, or a worker
    reading a chunk, which is smaller), started from a small launcher, since a child's ru_maxrss
    counts the process it was forked from."""
    from tests.analysis.hostile_inputs import run_summary

    run = run_summary(path)
    assert run.returncode == 0, f"summary failed on {path}: {run.stderr[-500:]}"
    return run.wall_s, run.peak_rss, json.loads(run.stdout)["traces"][0]["gpu"]


SUMMARY_RUNS = {"--jobs 1": ("summary", "--jobs", "1"), "every core": ("summary",)}
"""The ``summary`` commands set against ``gzip -dc``: one process (per-core speed), and the default,
which splits one trace over every usable CPU (analysis/trace/split.py)."""


def gzip_ratio(path: Path, rounds: int) -> dict[str, tuple[float, float]]:
    """``summary`` on ``path``.gz against ``gzip -dc`` of the same file, side by side, ``rounds``
    times, for each of SUMMARY_RUNS (issue 18 point 4: at most 2x): name -> median (wall x, CPU x).
    Wall time is what the goal names; CPU time (user + system, the workers' included) is also
    shown, as it is what a loaded machine changes least."""
    from tests.analysis.hostile_inputs import run_summary

    gz = path.with_name(path.name + ".gz")
    if not gz.exists():
        with open(gz, "wb") as f:
            subprocess.run(["gzip", "-c", "-6", str(path)], stdout=f, check=True)
    print(
        f"\nsummary vs gzip -dc on {gz.name} ({gz.stat().st_size / 1e6:.1f} MB gzip, {path.stat().st_size / 1e6:.0f} MB JSON)"
    )
    print(
        f"{'round':>5} {'gzip s':>7} {'gzip cpu':>9} {'summary':>11} {'s':>6} {'cpu':>6} {'RSS MB':>7} {'wall x':>7} {'cpu x':>6}"
    )
    ratios: dict[str, list[tuple[float, float]]] = {name: [] for name in SUMMARY_RUNS}
    for r in range(rounds):
        t0 = time.perf_counter()
        p = subprocess.Popen(["gzip", "-dc", str(gz)], stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(p.pid, 0)
        gzip_wall, gzip_cpu = time.perf_counter() - t0, usage.ru_utime + usage.ru_stime
        assert os.waitstatus_to_exitcode(status) == 0
        for name, command in SUMMARY_RUNS.items():
            run = run_summary(gz, command=command)
            assert run.returncode == 0, run.stderr[-500:]
            ratios[name].append((run.wall_s / gzip_wall, run.cpu_s / gzip_cpu))
            print(
                f"{r + 1:>5} {gzip_wall:7.2f} {gzip_cpu:9.2f} {name:>11} {run.wall_s:6.2f} {run.cpu_s:6.2f} "
                f"{run.peak_rss / 1e6:7.0f} {ratios[name][-1][0]:7.2f} {ratios[name][-1][1]:6.2f}",
                flush=True,
            )
    medians = {}
    for name, pairs in ratios.items():
        wall_x, cpu_x = statistics.median(w for w, _ in pairs), statistics.median(c for _, c in pairs)
        medians[name] = (wall_x, cpu_x)
        print(f"median, summary ({name}): {wall_x:.2f}x the wall time and {cpu_x:.2f}x the CPU time of gzip -dc")
    return medians


HTA_CODE = (
    "import sys\nfrom hta.trace_analysis import TraceAnalysis\n"
    "t = TraceAnalysis(trace_dir=sys.argv[1], include_last_profiler_step=True)\n"
    "print(t.get_temporal_breakdown(visualize=False).to_dict('records'))\n"
)


def run_hta(path: Path):
    import psutil

    peak = [0]
    t0 = time.perf_counter()
    p = subprocess.Popen(
        [sys.executable, "-c", HTA_CODE, str(path.parent)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    proc = psutil.Process(p.pid)

    def sample():
        while p.poll() is None:
            try:
                rss = sum(c.memory_info().rss for c in [proc] + proc.children(recursive=True))
                peak[0] = max(peak[0], rss)
            except psutil.Error:
                pass
            time.sleep(0.1)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    out, _ = p.communicate()
    wall = time.perf_counter() - t0
    th.join()
    assert p.returncode == 0, "HTA failed"
    return wall, peak[0], out.decode().strip()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes-mb", type=float, nargs="+", default=[100, 250, 1100])
    ap.add_argument("--hta-max-mb", type=float, default=250)
    ap.add_argument("--work", default="/tmp/bridge_analysis_bench")
    ap.add_argument("--gzip-ratio-mb", type=float, default=0, help="also: summary vs gzip -dc on a trace this big")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the gzip -dc comparison")
    args = ap.parse_args()
    work = Path(args.work)
    print("reader: msgspec on chunks of events (ISA-L gzip); streaming fallback: ijson", end=" ")
    print(__import__("bridge_plugins.analysis.trace.reader", fromlist=["x"]).backends()[0].backend)
    print(
        f"{'size MB':>8} {'ours s':>8} {'ours RSS MB':>12} {'RSS/size':>9} {'HTA s':>8} {'HTA RSS MB':>11} {'HTA/ours':>9}"
    )
    for mb in args.sizes_mb:
        d = work / f"size{int(mb)}"
        d.mkdir(parents=True, exist_ok=True)
        path = d / "rank0.json"
        size = path.stat().st_size if path.exists() and path.stat().st_size >= mb * 1e6 else build(path, mb)
        wall, rss, gpu = run_ours(path)
        line = f"{size / 1e6:8.0f} {wall:8.1f} {rss / 1e6:12.0f} {rss / size:9.3f}"
        agree = ""
        if mb <= args.hta_max_mb:
            hwall, hrss, hta = run_hta(path)
            line += f" {hwall:8.1f} {hrss / 1e6:11.0f} {hwall / wall:9.1f}"
            agree = f"   HTA: {hta}"
        print(line, flush=True)
        print(
            f"         ours: computation {gpu['computation_us']:.0f} idle {gpu['idle_us']:.0f} "
            f"non-compute {gpu['communication_us'] + gpu['memory_us']:.0f} span {gpu['span_us']:.0f}{agree}",
            flush=True,
        )
    if args.gzip_ratio_mb:
        d = work / f"size{int(args.gzip_ratio_mb)}"
        d.mkdir(parents=True, exist_ok=True)
        path = d / "rank0.json"
        if not path.exists() or path.stat().st_size < args.gzip_ratio_mb * 1e6:
            build(path, args.gzip_ratio_mb)
        gzip_ratio(path, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
