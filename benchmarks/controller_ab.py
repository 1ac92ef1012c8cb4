"""The controller's per-step cost in two checkouts, side by side in one run.

    .venv/bin/python -m benchmarks.controller_ab --before ../base-checkout [--after .] [--pairs 6]

Runs ``benchmarks.controller_overhead --skip-macro`` (micro only) in each checkout in turn, in
alternating order, each with its own code first on ``PYTHONPATH``, and prints per variant the
median over pairs of after/before of the ns per ``with ctl.step(i)`` iteration, raw and divided
by the same run's ``with`` on a prebuilt no-op object (code neither checkout changes, so the
second ratio cancels what the machine's load does to both). At or below 1: no cost per step.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REF = "ref_with_prebuilt"
"""``with`` on a prebuilt no-op object: the same code in both checkouts, the yardstick for load."""


def _run(tree: Path, out: Path, extra: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, "-m", "benchmarks.controller_overhead", "--skip-macro", "--json", str(out), *extra]
    subprocess.run(cmd, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
    return {r["name"]: r for r in json.loads(out.read_text())["micro"]["variants"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, required=True, help="the checkout to compare against")
    ap.add_argument("--after", type=Path, default=Path(__file__).resolve().parents[1], help="default: this one")
    ap.add_argument("--pairs", type=int, default=6, help="runs of each checkout, alternating (default 6)")
    ap.add_argument("--rounds", default="7", help="controller_overhead --rounds (default 7)")
    ap.add_argument("--iters", default="50000", help="controller_overhead --iters (default 50000)")
    a = ap.parse_args(argv)
    extra = ["--rounds", a.rounds, "--iters", a.iters]
    trees = {"before": a.before.resolve(), "after": a.after.resolve()}
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.pairs):
            for side in ("before", "after") if i % 2 == 0 else ("after", "before"):
                runs[side].append(_run(trees[side], Path(tmp, f"{side}{i}.json"), extra))
    print(f"before: {trees['before']}\nafter:  {trees['after']}\n{a.pairs} pairs, alternating order")
    print(f"{'variant':<28} {'before ns':>10} {'after ns':>10} {'ratio':>7} {'vs prebuilt with':>17}")
    for name in runs["after"][0]:
        if name not in runs["before"][0]:
            continue
        b_ns = [r[name]["median_ns_per_iter"] for r in runs["before"]]
        a_ns = [r[name]["median_ns_per_iter"] for r in runs["after"]]
        ratio = statistics.median(x / y for x, y in zip(a_ns, b_ns, strict=True))
        b_ref = [r[name]["median_ns_per_iter"] / r[REF]["median_ns_per_iter"] for r in runs["before"]]
        a_ref = [r[name]["median_ns_per_iter"] / r[REF]["median_ns_per_iter"] for r in runs["after"]]
        normalized = statistics.median(x / y for x, y in zip(a_ref, b_ref, strict=True))
        print(
            f"{name:<28} {statistics.median(b_ns):>10.1f} {statistics.median(a_ns):>10.1f} "
            f"{ratio:>7.3f} {normalized:>17.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
