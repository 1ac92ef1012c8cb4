"""What one rank writes per profiled step: the recipe's PyTorch trace size against window length.

docs/scale.md extrapolates shared-file-system load from these numbers. The recipe's default job
(``recipes.train.pretrain``, default model, CPU, one rank) runs with a short and a long window;
the difference divided by the extra steps is the per-step cost, the rest is the per-file fixed
part. Both gzip (what lands on disk) and uncompressed bytes (what a reader parses), with the
profiler's defaults and with shapes and stacks on.

    python -m benchmarks.trace_bytes [--short 2] [--long 6] [--json out.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import os
import sys
import tempfile
import time

import torch

from bridge_plugins import ProfilingConfig
from recipes.tiny_gpt import tiny_gpt_config
from recipes.train import pretrain

START = 2


def trace_size(window: int, detailed: bool) -> tuple:
    """(gzip bytes, raw bytes, events) of the one trace a window of ``window`` steps writes."""
    with tempfile.TemporaryDirectory() as out:
        profiling = ProfilingConfig(
            use_pytorch_profiler=True,
            profile_step_start=START,
            profile_step_end=START + window,
            output_dir=out,
            record_shapes=detailed,
            pytorch_profiler_with_stack=detailed,
        )
        result = pretrain(
            tiny_gpt_config(train__train_iters=START + window + 1, train__device="cpu", profiling=profiling)
        )
        (trace,) = [a for a in result["artifacts"] if a.endswith(".pt.trace.json.gz")]
        with gzip.open(trace, "rb") as f:
            raw = f.read()
        return os.path.getsize(trace), len(raw), len(json.loads(raw)["traceEvents"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--short", type=int, default=2)
    ap.add_argument("--long", type=int, default=6)
    ap.add_argument("--json")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    torch.set_num_threads(1)
    print(f"command: python -m benchmarks.trace_bytes {' '.join(sys.argv[1:])}".rstrip())
    print(
        f"torch {torch.__version__}, {time.strftime('%Y-%m-%d %H:%M')}, recipe defaults "
        f"(hidden 64, 2 layers, batch 4x64), CPU, 1 rank"
    )
    results = {}
    for detailed in (False, True):
        label = "shapes+stacks" if detailed else "defaults"
        (gz_s, raw_s, ev_s), (gz_l, raw_l, ev_l) = trace_size(args.short, detailed), trace_size(args.long, detailed)
        extra = args.long - args.short
        row = {
            "gzip_per_step": (gz_l - gz_s) / extra,
            "raw_per_step": (raw_l - raw_s) / extra,
            "events_per_step": (ev_l - ev_s) / extra,
            "gzip_fixed": gz_s - args.short * (gz_l - gz_s) / extra,
            f"gzip_{args.short}_steps": gz_s,
            f"gzip_{args.long}_steps": gz_l,
        }
        results[label] = row
        print(
            f"{label:14s} per step: {row['gzip_per_step'] / 1024:7.1f} KiB gzip, "
            f"{row['raw_per_step'] / 1024:8.1f} KiB raw, "
            f"{row['events_per_step']:6.0f} events"
            f"   fixed per file: {row['gzip_fixed'] / 1024:6.1f} KiB gzip"
            f"   ({args.short} steps: {gz_s / 1024:.1f} KiB, {args.long} steps: {gz_l / 1024:.1f} KiB gzip)"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
