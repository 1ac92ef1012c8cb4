"""Scale of `bridge-plugins summary` on big traces, against HTA (issue 10, item 5).

Builds synthetic single-rank traces by repeating the real job2 fixture's events (40k events, three
ProfilerSteps) with shifted timestamps, correlation ids and step numbers, so each copy is three
more steps of the same job. Then, on files of equal size, runs in fresh processes:

- ours: ``python -m bridge_plugins summary FILE --json`` (peak RSS from wait4, exact);
- HTA: ``TraceAnalysis(trace_dir, include_last_profiler_step=True)`` + ``get_temporal_breakdown``
  (peak RSS summed over its process tree, sampled every 0.1 s: HTA parses in worker processes).

Ours also runs alone on the largest file (>= 1 GB). HTA only up to --hta-max-mb, as its memory
needs many times the file size. Needs scripts/install_hta.sh. Run it with nice:

    nice .venv/bin/python -m benchmarks.analysis_scale --sizes-mb 100 250 1100 --hta-max-mb 250
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

SHARED = Path(os.environ.get("BRIDGE_SHARED") or Path(__file__).resolve().parents[2] / "shared")
FIXTURE = SHARED / "fixtures" / "gpu-traces" / "job2_rank0.json.gz"
STEPS_PER_COPY = 3


def build(path: Path, target_mb: float) -> int:
    """Write a trace of at least ``target_mb`` MB (uncompressed); returns its size in bytes."""
    with gzip.open(FIXTURE) as fh:
        trace = json.load(fh)
    events = trace.pop("traceEvents")
    timed = [e for e in events if isinstance(e.get("ts"), (int, float))]
    period = max(e["ts"] + e.get("dur", 0) for e in timed) - min(e["ts"] for e in timed) + 1000.0
    max_corr = max(e.get("args", {}).get("correlation", 0) for e in events) + 1
    header = json.dumps(trace)[:-1]
    with open(path, "w") as f:
        f.write(header + ', "traceEvents": [\n')
        copy, first = 0, True
        while f.tell() < target_mb * 1e6:
            for e in events:
                e = dict(e)
                if "ts" in e:
                    e["ts"] = e["ts"] + copy * period
                args = e.get("args")
                if isinstance(args, dict) and "correlation" in args:
                    e["args"] = {**args, "correlation": args["correlation"] + copy * max_corr}
                name = e.get("name", "")
                if isinstance(name, str) and name.startswith("ProfilerStep#"):
                    e["name"] = f"ProfilerStep#{int(name[13:]) + copy * STEPS_PER_COPY}"
                f.write(("" if first else ",\n") + json.dumps(e))
                first = False
            copy += 1
        f.write("\n]}\n")
    return path.stat().st_size


def run_ours(path: Path):
    """(wall s, peak RSS bytes, the summary's GPU breakdown)."""
    out = path.with_suffix(".summary.json")
    t0 = time.perf_counter()
    with open(out, "w") as f:
        p = subprocess.Popen(
            [sys.executable, "-m", "bridge_plugins", "summary", str(path), "--json"],
            stdout=f,
            stderr=subprocess.DEVNULL,
        )
        _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    assert os.waitstatus_to_exitcode(status) == 0, f"summary failed on {path}"
    return wall, usage.ru_maxrss * 1024, json.loads(out.read_text())["traces"][0]["gpu"]


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
    args = ap.parse_args()
    work = Path(args.work)
    print(f"ijson backend: {__import__('bridge_plugins.analysis.trace.reader', fromlist=['x'])._ijson.backend}")
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
