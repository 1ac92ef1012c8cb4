"""Traces of our own recipe, made with the real ProfilingController on CPU."""

from __future__ import annotations

import time

import torch

from bridge_plugins import ProfilingConfig, ProfilingController
from recipes.config import ModelConfig
from recipes.model import build_training, train_step


def profiled_run(out, start, end, steps=8):
    """Run the recipe's training step ``steps`` times with a window [start, end); the run's wall time (us)."""
    torch.manual_seed(0)
    model, opt, data = build_training(
        ModelConfig(hidden_size=32, num_layers=1, num_heads=2), 16, 2, torch.device("cpu")
    )
    cfg = ProfilingConfig(
        output_dir=str(out), use_pytorch_profiler=True, profile_step_start=start, profile_step_end=end
    )
    t0 = time.perf_counter()
    with ProfilingController(cfg, rank=0) as ctl:
        for i in range(steps):
            with ctl.step(i):
                train_step(model, opt, data)
    return (time.perf_counter() - t0) * 1e6
