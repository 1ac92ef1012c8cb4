"""Time and peak RSS of ``bridge-plugins memory`` on each hostile snapshot (tests/analysis/hostile_snapshots.py),
beside a normal snapshot of about the same size (the fixture's trace repeated), in one run.

    PYTHONPATH=. python benchmarks/hostile_snapshots.py [NAME_SUBSTRING]
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


def run_cli(path: Path, timeout: float = 600) -> tuple[int, float, float, str]:
    """(exit code, seconds, peak RSS in MB, stderr) of ``python -m bridge_plugins memory PATH``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = run_measured([sys.executable, "-m", "bridge_plugins", "memory", str(path)], ROOT, env, timeout)
    return r["rc"], r["seconds"], r["rss_mb"], r["stderr"]


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
            "| case | file size | exit | time s | peak RSS MB | normal snapshot of that size: time s, RSS MB | stderr |"
        )
        print("|---|---|---|---|---|---|---|")
        for i, name in enumerate(CASES):
            if pick not in name:
                continue
            path = Path(tmp, f"case{i}.pickle")
            _in_child(f"CASES[{name!r}](Path({str(path)!r}))")
            size = path.stat().st_size
            rc, sec, rss, err = run_cli(path)
            normal = ""
            if size > 10 << 20:
                ref = Path(tmp, "normal.pickle")
                _in_child(f"normal_snapshot(Path({str(ref)!r}), {size})")
                nrc, nsec, nrss, _ = run_cli(ref)
                normal = f"{nsec:.1f}, {nrss:.0f} (exit {nrc}, {ref.stat().st_size >> 20} MB)"
                ref.unlink()
            lines = err.strip().splitlines()
            shown = (lines[-1] if lines else "").replace(tmp, "$TMP").replace("|", "/")[:150]
            print(f"| {name} | {size:,} | {rc} | {sec:.1f} | {rss:.0f} | {normal} | {len(lines)} line(s): {shown} |")
            path.unlink()


if __name__ == "__main__":
    main()
