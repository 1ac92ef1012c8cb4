"""Time and peak RSS of ``bridge-plugins memory`` on each hostile snapshot (tests/analysis/hostile_snapshots.py),
beside a normal snapshot of about the same size (the fixture's trace repeated), in one run; then what
the opcode checks before unpickling cost on a normal 150 MB snapshot. Results:
benchmarks/results/hostile_snapshots_cpu.txt.

    PYTHONPATH=. nice python benchmarks/hostile_snapshots.py [NAME_SUBSTRING]
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.analysis.hostile_snapshots import CASES, run_measured  # noqa: E402


def run_cli(path: Path, timeout: float = 900) -> dict:
    """``python -m bridge_plugins memory PATH``, measured: rc, seconds, cpu_s, rss_mb, stderr."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return run_measured([sys.executable, "-m", "bridge_plugins", "memory", str(path)], ROOT, env, timeout)


_CHECKS = (
    "import sys; from bridge_plugins.analysis.memory.pickle_scan import count_containers, crafted_at; "
    "fh = open(sys.argv[1], 'rb'); print(count_containers(fh), crafted_at(fh))"
)


def normal_snapshot(path: Path, size: int) -> None:
    """The recipe fixture's snapshot with its trace repeated until the file is about ``size`` bytes
    (each copy of an entry is its own dict; its frames stay shared, as torch shares them)."""
    data = pickle.loads((ROOT / "tests/fixtures/memory_recipe_b4.pickle").read_bytes())
    trace = data["device_traces"][0]

    def written(copies: int) -> int:
        data["device_traces"][0] = [dict(e) for _ in range(copies) for e in trace]
        return len(pickle.dumps(data, protocol=4))

    one, two = written(1), written(2)
    written(max(1, 1 + (size - one) // (two - one)))
    path.write_bytes(pickle.dumps(data, protocol=4))


def _in_child(code: str) -> None:
    """Run a generator in its own process: a child inherits its parent's peak RSS in ru_maxrss,
    so the parent that starts the measured runs stays small."""
    prelude = "import sys; sys.set_int_max_str_digits(0); from pathlib import Path; "
    prelude += (
        "from tests.analysis.hostile_snapshots import CASES; from benchmarks.hostile_snapshots import normal_snapshot; "
    )
    subprocess.run(
        [sys.executable, "-c", prelude + code], cwd=ROOT, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )


def main() -> None:
    pick = sys.argv[1] if len(sys.argv) > 1 else ""
    with tempfile.TemporaryDirectory() as tmp:
        print(
            "| case | file size | exit | time s | CPU s | peak RSS MB | normal snapshot of that size: time s, CPU s, RSS MB | result |"
        )
        print("|---|---:|---|---:|---:|---:|---|---|")
        for i, name in enumerate(CASES):
            if pick not in name:
                continue
            path = Path(tmp, f"case{i}.pickle")
            _in_child(f"CASES[{name!r}](Path({str(path)!r}))")
            size = path.stat().st_size
            r = run_cli(path)
            normal = ""
            if size > 10 << 20:
                ref = Path(tmp, "normal.pickle")
                _in_child(f"normal_snapshot(Path({str(ref)!r}), {size})")
                n = run_cli(ref)
                normal = f"{n['seconds']:.1f}, {n['cpu_s']:.1f}, {n['rss_mb']:.0f} (exit {n['rc']}, {ref.stat().st_size:,} B)"
                ref.unlink()
            lines = r["stderr"].strip().splitlines()
            shown = (lines[-1] if lines else "").replace(tmp, "$TMP").replace("|", "/")
            shown = shown.removeprefix("bridge-plugins memory: error: ")
            print(
                f"| {name} | {size:,} | {r['rc']} | {r['seconds']:.1f} | {r['cpu_s']:.1f} | {r['rss_mb']:.0f} | {normal} "
                f"| {len(lines)} line(s): {shown} |"
            )
            path.unlink()
        if pick:
            return
        ref = Path(tmp, "normal.pickle")
        _in_child(f"normal_snapshot(Path({str(ref)!r}), 150_000_000)")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        checks = run_measured([sys.executable, "-c", _CHECKS, str(ref)], ROOT, env, 900)
        whole = run_cli(ref)
        print(
            f"\nopcode checks before unpickling, on a normal snapshot of {ref.stat().st_size:,} B: "
            f"{checks['seconds']:.1f} s ({checks['cpu_s']:.1f} s CPU, {checks['rss_mb']:.0f} MB RSS), beside the whole "
            f"`memory` on it (checks included): {whole['seconds']:.1f} s ({whole['cpu_s']:.1f} s CPU, "
            f"{whole['rss_mb']:.0f} MB RSS); checks / whole CPU = {checks['cpu_s'] / whole['cpu_s']:.2f}"
        )


if __name__ == "__main__":
    main()
