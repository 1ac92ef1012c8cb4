"""``summary FILE --json`` on a large Nsight Systems export against ``nsys stats`` on the same file.

Builds the export once (in --dir, default /tmp/nsys_scale) from the real fixture
(shared/fixtures/nsys): its kernel rows are copied into the kernel table again and again, each copy
shifted past the last, until the file reaches --size-mb. Then, in fresh processes, one after the
other: ``bridge-plugins summary FILE --json`` and ``nsys stats --report gpukernsum,cudaapisum,
gpumemtimesum,nvtxsum --format csv`` (on a copy: nsys stats may add columns to the file it reads),
with wall time and peak RSS (wait4), and checks that the kernel figures agree. Needs nsys on PATH.

    nice .venv/bin/python -m benchmarks.nsys_scale --size-mb 2000
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.analysis.hostile_inputs import _MEASURE, Run, run_summary
from tests.analysis.nsys_fixture import SAXPY, copy_of

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
REPORTS = "gpukernsum,cudaapisum,gpumemtimesum,nvtxsum"


def build(path: Path, size_mb: float) -> tuple[int, int]:
    """The export at ``path`` of at least ``size_mb`` MB (kept when it is there already): (bytes, kernel rows)."""
    if not path.is_file() or path.stat().st_size < size_mb * 1e6:
        partial = path.with_suffix(".partial")
        copy_of(SAXPY, partial)
        with sqlite3.connect(partial) as conn:
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({KERNEL})")]
            shifted = ", ".join("start + :shift" if c == "start" else "end + :shift" if c == "end" else c for c in cols)
            while (size := partial.stat().st_size) < size_mb * 1e6:
                lo, hi, rows = conn.execute(f"SELECT min(start), max(end), count(*) FROM {KERNEL}").fetchone()
                more = min(rows, int(rows * (size_mb * 1e6 - size) / size) + 1000)  # double, or what is left
                sql = f"INSERT INTO {KERNEL} SELECT {shifted} FROM {KERNEL} ORDER BY rowid LIMIT :more"
                conn.execute(sql, {"shift": hi - lo + 1_000_000, "more": more})
                conn.commit()
                print(f"  {partial.stat().st_size / 1e6:.0f} MB", file=sys.stderr, flush=True)
        partial.replace(path)
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        rows = conn.execute(f"SELECT count(*) FROM {KERNEL}").fetchone()[0]
    return path.stat().st_size, rows


def run_nsys_stats(path: Path, out_prefix: Path, timeout: float = 3600) -> Run:
    """``nsys stats`` on ``path`` in a fresh process, timed, with its peak RSS (its process tree's largest)."""
    nsys = shutil.which("nsys")
    assert nsys, "no nsys on PATH (scripts/install_nsys.sh)"
    with tempfile.NamedTemporaryFile() as res:
        cmd = [
            nsys,
            "stats",
            "--report",
            REPORTS,
            "--format",
            "csv",
            "-o",
            str(out_prefix),
            "--force-overwrite",
            "true",
            str(path),
        ]
        t0 = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", _MEASURE, res.name, *cmd], capture_output=True, text=True, timeout=timeout
        )
        wall = time.perf_counter() - t0
        code, rss, cpu = Path(res.name).read_text().split()
    return Run(int(code), done.stdout, done.stderr, wall, int(rss), float(cpu))


def kernel_totals_agree(summary: dict, csv_path: Path) -> bool:
    """Whether ``summary``'s gpukernsum rows have nsys's counts and totals (to 0.1 %)."""
    with csv_path.open(newline="") as fh:
        theirs = {r["Name"]: (int(r["Instances"]), float(r["Total Time (ns)"])) for r in csv.DictReader(fh)}
    ours = {r["name"]: (r["count"], r["total_ns"]) for r in summary["traces"][0]["nsys"]["stats"]["gpu_kernels"]}
    return set(ours) == set(theirs) and all(
        ours[k][0] == theirs[k][0] and abs(ours[k][1] - theirs[k][1]) <= 1e-3 * theirs[k][1] for k in ours
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=2000, help="the export's size (default 2000)")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/nsys_scale"), help="where the export is built and kept")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    path = args.dir / f"saxpy_x_{int(args.size_mb)}mb.sqlite"
    print(f"$ {' '.join(sys.argv)}\n# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}")
    t0 = time.perf_counter()
    size, rows = build(path, args.size_mb)
    print(
        f"export: {path} {size / 1e6:.0f} MB, {rows:,} kernel rows (built or found in {time.perf_counter() - t0:.0f} s)"
    )
    ours = run_summary(path, timeout=3600)
    assert ours.returncode == 0, ours.stderr[-500:]
    summary = json.loads(ours.stdout)
    copy = args.dir / "for_nsys_stats.sqlite"
    copy_of(path, copy)
    theirs = run_nsys_stats(copy, args.dir / "stats")
    copy.unlink()
    agree = theirs.returncode == 0 and kernel_totals_agree(summary, args.dir / "stats_gpukernsum.csv")
    print(f"{'command':<40} {'wall s':>8} {'CPU s':>8} {'peak RSS MB':>12}")
    for name, run in (("bridge-plugins summary FILE --json", ours), (f"nsys stats --report {REPORTS}", theirs)):
        print(f"{name:<40} {run.wall_s:>8.1f} {run.cpu_s:>8.1f} {run.peak_rss / 1e6:>12.0f}")
    print(
        f"ratio summary/nsys stats: wall {ours.wall_s / theirs.wall_s:.2f}x, peak RSS {ours.peak_rss / theirs.peak_rss:.2f}x"
    )
    print(f"nsys stats exit {theirs.returncode}; kernel counts and totals agree: {agree}")


if __name__ == "__main__":
    main()
