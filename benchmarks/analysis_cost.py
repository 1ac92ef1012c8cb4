"""What the analyzers and findings of issue 17 cost `bridge-plugins summary`, as a ratio in one run.

Builds the synthetic trace of analysis_scale (job2 repeated to the size asked), extracts the code
of a base commit (default ``arch-moves``, before the analyzers) and of a new one (default HEAD)
with ``git archive``, and times ``python -m bridge_plugins summary FILE --json`` of each in fresh processes,
alternating (base, new, base, new...) so a drift in machine load hits both. Reports the median
wall time and peak RSS of each and their ratio (goal: new/base <= 1.3). Run it with nice:

    nice .venv/bin/python -m benchmarks.analysis_cost --size-mb 1000 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from benchmarks.analysis_scale import build

ROOT = Path(__file__).resolve().parents[1]


def extract(commit: str, into: Path) -> Path:
    """The base commit's bridge_plugins package under ``into`` (a PYTHONPATH root)."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, "bridge_plugins"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def run(code_root: Path, trace: Path) -> tuple[float, int]:
    """(wall s, peak RSS bytes) of one summary --json in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(code_root)}
    t0 = time.perf_counter()
    p = subprocess.Popen(
        [sys.executable, "-m", "bridge_plugins", "summary", str(trace), "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=code_root,
    )
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    assert os.waitstatus_to_exitcode(status) == 0, f"summary failed with {code_root}"
    return wall, usage.ru_maxrss * 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=1000.0, help="size of the synthetic trace (default 1000)")
    ap.add_argument("--rounds", type=int, default=3, help="runs of each, alternating (default 3)")
    ap.add_argument("--base", default="arch-moves", help="the commit before the analyzers (default arch-moves)")
    ap.add_argument("--new", default="HEAD", help="the commit to measure (default HEAD)")
    ap.add_argument("--workdir", type=Path, default=None, help="where to build the trace (default: a temp dir)")
    args = ap.parse_args(argv)
    print(f"$ {' '.join([Path(sys.executable).name, '-m', 'benchmarks.analysis_cost', *(argv or sys.argv[1:])])}")
    print(f"date {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}, cpus {os.cpu_count()}, load {os.getloadavg()}")
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        tmp_path = Path(tmp)
        trace = tmp_path / "synthetic.json"
        size = build(trace, args.size_mb)
        print(f"trace: {size / 1e6:.0f} MB (job2_rank0 repeated)")
        base_root, new_root = (tmp_path / "base", tmp_path / "new")
        for commit, root in ((args.base, base_root), (args.new, new_root)):
            root.mkdir()
            extract(commit, root)
        runs: dict[str, list[tuple[float, int]]] = {"base": [], "new": []}
        for i in range(args.rounds):
            for label, root in (("base", base_root), ("new", new_root)):
                wall, rss = run(root, trace)
                runs[label].append((wall, rss))
                print(f"round {i + 1} {label}: {wall:.1f} s, peak RSS {rss / 2**20:.0f} MiB", flush=True)
    med = {k: (statistics.median(w for w, _ in v), statistics.median(r for _, r in v)) for k, v in runs.items()}
    print(f"base ({args.base}): median {med['base'][0]:.1f} s, {med['base'][1] / 2**20:.0f} MiB")
    print(f"new ({args.new}): median {med['new'][0]:.1f} s, {med['new'][1] / 2**20:.0f} MiB")
    print(f"ratio new/base: time {med['new'][0] / med['base'][0]:.2f}x, peak RSS {med['new'][1] / med['base'][1]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
