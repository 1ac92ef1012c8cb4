"""How long the training thread stalls when a PyTorch-profiler window closes: sync vs background export.

When only some ranks profile, the profiled ranks pause at the window's end to write their trace
while the others wait in the next collective (Megatron-LM #3273, Megatron Bridge #3475: NCCL
watchdog timeouts). ``background_export=True`` (the default) leaves only ``prof.stop()`` on the
training thread. This measures, interleaved A/B in one process, the stall: the time of the
window's last step plus the step after it, minus two median steps, and the whole run's time.

    python -m benchmarks.window_close [--rounds 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time

import torch

from bridge_plugins import ProfilingConfig, ProfilingController
from recipes.config import ModelConfig
from recipes.model import build_training, train_step


def make_step():
    model, opt, data = build_training(
        ModelConfig(hidden_size=256, num_layers=4, num_heads=4), 128, 8, torch.device("cpu"), lr=1e-4
    )
    return lambda: train_step(model, opt, data)


def one_run(step, background: bool, out: str, steps: int = 16, start: int = 2, end: int = 10) -> dict:
    cfg = ProfilingConfig(
        use_pytorch_profiler=True,
        profile_step_start=start,
        profile_step_end=end,
        output_dir=out,
        record_shapes=True,
        pytorch_profiler_with_stack=True,
        background_export=background,
    )
    times = []
    t0 = time.perf_counter()
    with ProfilingController(cfg, rank=0) as ctl:
        for i in range(steps):
            a = time.perf_counter()
            with ctl.step(i):
                step()
            times.append(time.perf_counter() - a)
    total = time.perf_counter() - t0
    normal = statistics.median(times[end + 2 :])
    stall = times[end - 1] + times[end] - 2 * normal
    return {"stall_s": stall, "total_s": total, "step_s": normal}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    torch.set_num_threads(1)
    print(f"command: python -m benchmarks.window_close {' '.join(sys.argv[1:])}".rstrip())
    print(
        f"torch {torch.__version__}, {time.strftime('%Y-%m-%d %H:%M')}, 1 torch thread, 8-step window with shapes+stacks"
    )
    step = make_step()
    for _ in range(3):
        step()
    res = {"sync": [], "background": []}
    with tempfile.TemporaryDirectory() as out:
        for r in range(args.rounds):
            order = ["sync", "background"] if r % 2 == 0 else ["background", "sync"]
            for name in order:
                res[name].append(one_run(step, name == "background", out))
    summary = {}
    for name, runs in res.items():
        summary[name] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        s = summary[name]
        print(
            f"{name:10s} stall at window close {s['stall_s'] * 1e3:8.1f} ms   whole run {s['total_s']:6.2f} s   step {s['step_s'] * 1e3:6.1f} ms"
        )
    ratio = summary["background"]["stall_s"] / summary["sync"]["stall_s"]
    print(
        f"stall ratio background/sync: {ratio:.2f}   whole-run ratio: {summary['background']['total_s'] / summary['sync']['total_s']:.2f}"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main()
