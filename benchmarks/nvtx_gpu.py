"""GPU: what the nsys backend costs per step, with and without per-op NVTX ranges.

Why per-op NVTX (torch's emit_nvtx) is off by default: it turns on the autograd profiler's
per-op callbacks for the whole window. This measures, side by side and interleaved, the recipe's
training step on one GPU with: no controller; the nsys backend with one NVTX range per step
(our default); the nsys backend with ``nvtx_per_op``; and with ``record_shapes`` (per-op ranges
carrying shapes). Run it bare (NVTX calls are near no-ops without a tool attached) and under
``nsys profile --capture-range=cudaProfilerApi`` for the cost with the tool attached.

    python benchmarks/nvtx_gpu.py [--rounds 5 --steps 20] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

from bridge_plugins import ProfilingConfig, ProfilingController  # noqa: E402
from recipes.config import ModelConfig  # noqa: E402
from recipes.model import build_training, train_step  # noqa: E402

VARIANTS = {
    "bare loop": None,
    "nsys, step ranges": dict(use_nsys_profiler=True),
    "nsys, per-op NVTX": dict(use_nsys_profiler=True, nvtx_per_op=True),
    "nsys, per-op NVTX + shapes": dict(use_nsys_profiler=True, record_shapes=True),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--json")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA: this benchmark needs a GPU")
        return
    import logging

    logging.basicConfig(level=logging.WARNING)
    print(f"command: python {' '.join(sys.argv)}")
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {time.strftime('%Y-%m-%d %H:%M')}")
    dev = torch.device("cuda")
    model, opt, data = build_training(
        ModelConfig(vocab_size=4096, hidden_size=512, num_layers=6, num_heads=8), 256, 16, dev, lr=1e-4
    )

    def step():
        train_step(model, opt, data)

    for _ in range(10):
        step()
    torch.cuda.synchronize()
    times = {k: [] for k in VARIANTS}
    base = 0
    for _r in range(args.rounds):
        for name, kw in VARIANTS.items():
            steps = range(base, base + args.steps)
            base += args.steps
            ctl = (
                ProfilingController(
                    ProfilingConfig(profile_step_start=steps.start, profile_step_end=steps.stop, **kw), rank=0
                )
                if kw
                else ProfilingController(None)
            )
            with ctl:
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for i in steps:
                    with ctl.step(i):
                        step()
                torch.cuda.synchronize()
                times[name].append((time.perf_counter() - t0) / args.steps * 1e3)
    bare = statistics.median(times["bare loop"])
    result = {}
    for name, ts in times.items():
        med = statistics.median(ts)
        result[name] = {"median_ms": med, "ratio": med / bare}
        print(f"{name:28s} {med:8.3f} ms/step  x{med / bare:.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
