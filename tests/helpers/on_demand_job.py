"""A DDP training job that runs long enough to be triggered: ``torchrun ... on_demand_job.py OUT STEPS``.

The recipe's TinyGPT, DDP over gloo, on_demand=True and no configured window; each step also
sleeps a little so the job's length does not depend on how fast this machine is. Prints
``rank R: DONE N steps`` when every step ran.
"""

import logging
import sys
import time

import torch
import torch.distributed as dist

from bridge_plugins import ProfilingConfig, ProfilingController
from recipes.config import ModelConfig
from recipes.model import build_training, train_step

logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(levelname)s %(message)s")
out, steps = sys.argv[1], int(sys.argv[2])
dist.init_process_group("gloo")
torch.manual_seed(0)
model, opt, data = build_training(ModelConfig(hidden_size=32, num_layers=1, num_heads=2), 16, 2, torch.device("cpu"),
                                  seed=dist.get_rank())
model = torch.nn.parallel.DistributedDataParallel(model)
done = 0
with ProfilingController(ProfilingConfig(on_demand=True, output_dir=out)) as ctl:
    for step in range(steps):
        with ctl.step(step):
            train_step(model, opt, data)
            time.sleep(0.03)
        done += 1
print(f"rank {dist.get_rank()}: DONE {done} steps", flush=True)
dist.destroy_process_group()
