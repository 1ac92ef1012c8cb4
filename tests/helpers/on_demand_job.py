"""A DDP training job that runs long enough to be triggered: ``torchrun ... on_demand_job.py OUT STEPS``,
or ``train(out, steps)`` from a Slurm task (tests/slurm_job.py).

The recipe's TinyGPT, DDP over gloo, on_demand=True and no configured window; each step also
sleeps a little so the job's length does not depend on how fast this machine is. Prints
``rank R: DONE N steps`` when every step ran (or the N steps run until a stop file appeared). The process group comes from the recipe's
``init_distributed``, so torchrun workers and plain srun tasks both work.
"""

import logging
import os
import sys
import time

import torch
import torch.distributed as dist

from bridge_plugins import ProfilingConfig, ProfilingController
from recipes.config import ModelConfig
from recipes.model import build_training, train_step
from recipes.train import init_distributed


def stop_requested(stop_file: str | None) -> bool:
    """Whether rank 0 sees ``stop_file``, agreed by every rank (they must run the same steps)."""
    if stop_file is None:
        return False
    flag = torch.tensor([int(dist.get_rank() == 0 and os.path.exists(stop_file))])
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return bool(flag.item())


def train(out: str, steps: int, sleep_s: float = 0.03, stop_file: str | None = None) -> list:
    """Train ``steps`` steps, sleeping ``sleep_s`` in each, with on-demand profiling writing under
    ``out``; the artifacts written. With ``stop_file``, every rank stops after the step in which
    rank 0 saw that file: a test ends the job when it has what it waited for, however slow the
    machine, instead of guessing how many steps that takes."""
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(levelname)s %(message)s")
    info = init_distributed("cpu")
    torch.manual_seed(0)
    model, opt, data = build_training(
        ModelConfig(hidden_size=32, num_layers=1, num_heads=2), 16, 2, torch.device("cpu"), seed=info.rank
    )
    model = torch.nn.parallel.DistributedDataParallel(model)
    done = 0
    with ProfilingController(ProfilingConfig(on_demand=True, output_dir=out)) as ctl:
        for step in range(steps):
            with ctl.step(step):
                train_step(model, opt, data)
                time.sleep(sleep_s)
            done += 1
            if stop_requested(stop_file):
                break
    print(f"rank {info.rank}: DONE {done} steps", flush=True)
    dist.destroy_process_group()
    return [str(p) for p in ctl.artifacts]


if __name__ == "__main__":
    train(sys.argv[1], int(sys.argv[2]), stop_file=sys.argv[3] if len(sys.argv) > 3 else None)
