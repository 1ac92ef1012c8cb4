"""Two costs a profiled GPU job pays that the window's own figures hide, as ratios.

1. The window's first step: the PyTorch profiler starts there (CUPTI initialisation on a GPU), so
   that step takes longer than the others it records. Ratio: first window step / median of the
   window's other steps, and / median unprofiled step.
2. Memory history before the window: ``record_memory_history`` records from the controller's
   entry (so parameter and optimizer allocations are in the snapshot, as Megatron Bridge does), so
   a window at step 1000 pays for recording 1000 steps. Ratio: median step with recording on and
   the window far ahead / median step with profiling off, interleaved A/B in one process.

Each round runs both variants of (2) in alternating order; medians over rounds. CUDA is
synchronized after every timed step. On a machine without CUDA part 2 says so and part 1 runs
on the CPU (a smoke run only: the figures that matter are the GPU's).

    python -m benchmarks.gpu_window_costs [--rounds 5] [--steps 30] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

import torch

from bridge_plugins import ProfilingConfig, ProfilingController
from recipes.config import ModelConfig
from recipes.model import build_training, train_step


def make_step(device: torch.device) -> Callable[[], None]:
    model, opt, data = build_training(ModelConfig(hidden_size=256, num_layers=4, num_heads=4), 128, 8, device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    def step() -> None:
        train_step(model, opt, data)
        sync()

    return step


def timed_steps(ctl: ProfilingController, step: Callable[[], None], steps: int) -> list[float]:
    times = []
    with ctl:
        for i in range(steps):
            a = time.perf_counter()
            with ctl.step(i):
                step()
            times.append(time.perf_counter() - a)
    return times


def first_window_step(step: Callable[[], None], out: str, start: int, end: int, steps: int) -> dict:
    cfg = ProfilingConfig(use_pytorch_profiler=True, profile_step_start=start, profile_step_end=end, output_dir=out)
    times = timed_steps(ProfilingController(cfg, rank=0), step, steps)
    window, outside = times[start:end], times[2:start]  # the first two steps warm up
    return {
        "first_vs_window": window[0] / statistics.median(window[1:]),
        "first_vs_unprofiled": window[0] / statistics.median(outside),
    }


def recording_before_window(step: Callable[[], None], out: str, steps: int, recording: bool) -> float:
    cfg = ProfilingConfig(
        record_memory_history=recording, profile_step_start=10**9, profile_step_end=10**9 + 1, output_dir=out
    )
    ctl = ProfilingController(cfg, rank=0, handle_sigterm=False)
    times = timed_steps(ctl, step, steps)
    return statistics.median(times[2:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=30, help="steps per run (memory-history part)")
    ap.add_argument("--json")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    print(f"command: python -m benchmarks.gpu_window_costs {' '.join(sys.argv[1:])}".rstrip())
    name = torch.cuda.get_device_name() if cuda else "CPU (smoke run: no CUDA)"
    print(f"torch {torch.__version__}, {time.strftime('%Y-%m-%d %H:%M')}, {name}")
    step = make_step(device)
    for _ in range(3):
        step()
    first, on, off = [], [], []
    with tempfile.TemporaryDirectory() as out:
        for r in range(args.rounds):
            first.append(first_window_step(step, out, start=8, end=14, steps=16))
            if cuda:
                for recording in [True, False] if r % 2 == 0 else [False, True]:
                    (on if recording else off).append(recording_before_window(step, out, args.steps, recording))
    result = {k: statistics.median(f[k] for f in first) for k in first[0]}
    print(
        f"first window step / median of the window's other steps: {result['first_vs_window']:.2f}; "
        f"/ median unprofiled step: {result['first_vs_unprofiled']:.2f}"
    )
    if cuda:
        result.update(step_recording_s=statistics.median(on), step_off_s=statistics.median(off))
        result["recording_vs_off"] = result["step_recording_s"] / result["step_off_s"]
        print(
            f"memory history before the window: step {result['step_recording_s'] * 1e3:.2f} ms vs "
            f"{result['step_off_s'] * 1e3:.2f} ms off, ratio {result['recording_vs_off']:.3f}"
        )
    else:
        print("memory history before the window: n/a (it records the CUDA allocator; no CUDA here)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
