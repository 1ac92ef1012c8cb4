"""The example training job: ``pretrain(config)`` and ``python -m recipes.train key=value ...``.

Runs on one process, under torchrun (``WORLD_SIZE`` > 1), or as several plain Slurm tasks
(``srun`` without a launcher: the process group is built from ``SLURM_PROCID``/``SLURM_NTASKS``).
gloo on CPU, nccl on CUDA; DDP over AdamW. Profiling is driven by ``ProfilingController``
from ``config.profiling``.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist

from bridge_plugins.runtime import ProfilingController
from recipes.config import ConfigContainer
from recipes.model import SyntheticTokens, TinyGPT, train_step
from recipes.overrides import OverrideError, parse_overrides
from recipes.stderr_filter import filter_kineto_markers

log = logging.getLogger("recipes.train")


@dataclass
class DistInfo:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device


def _slurm_master_addr() -> str:
    if os.environ.get("SLURM_JOB_NUM_NODES", os.environ.get("SLURM_NNODES", "1")) == "1":
        return "127.0.0.1"
    nodelist = os.environ.get("SLURM_STEP_NODELIST") or os.environ["SLURM_JOB_NODELIST"]
    out = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True, check=True)
    return out.stdout.split()[0]


def _adopt_slurm_tasks_env() -> None:
    """Plain Slurm tasks (srun, no torchrun) have SLURM_* but no RANK/WORLD_SIZE: derive them.

    SLURM_STEP_NUM_TASKS, not SLURM_NTASKS: the batch script itself also sees SLURM_NTASKS=2
    with SLURM_PROCID=0, and a job started there directly must not wait for a rank 1.
    """
    env = os.environ
    if "RANK" in env or int(env.get("SLURM_STEP_NUM_TASKS", "1")) <= 1 or "SLURM_PROCID" not in env:
        return
    env["RANK"] = env["SLURM_PROCID"]
    env["WORLD_SIZE"] = env["SLURM_STEP_NUM_TASKS"]
    env["LOCAL_RANK"] = env.get("SLURM_LOCALID", "0")
    env.setdefault("MASTER_ADDR", _slurm_master_addr())
    env.setdefault("MASTER_PORT", str(20000 + int(env.get("SLURM_JOB_ID", "0")) % 20000))


def init_distributed(device_pref: str = "auto") -> DistInfo:
    """Join the process group when the environment asks for more than one rank."""
    _adopt_slurm_tasks_env()
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    use_cuda = device_pref == "cuda" or (device_pref == "auto" and torch.cuda.is_available())
    if device_pref not in ("auto", "cpu", "cuda"):
        raise ValueError(f"train.device={device_pref!r}: use 'auto', 'cpu' or 'cuda'")
    if use_cuda:
        torch.cuda.set_device(local_rank % torch.cuda.device_count())
        device = torch.device("cuda", torch.cuda.current_device())
    else:
        device = torch.device("cpu")
    if world_size > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if use_cuda else "gloo", rank=rank, world_size=world_size)
    return DistInfo(rank, world_size, local_rank, device)


def pretrain(config: ConfigContainer) -> dict:
    """Train ``config.train.train_iters`` steps; profile as ``config.profiling`` says.

    Returns the final loss and the profiling artifacts this rank wrote.
    """
    _configure_logging()
    info = init_distributed(config.train.device)
    tc = config.train
    torch.manual_seed(tc.seed)
    controller = ProfilingController.from_config(config)
    losses = []
    try:
        with controller:  # entered before the model exists, so memory history sees its allocations
            model = TinyGPT(config.model, tc.seq_length).to(info.device)
            if info.world_size > 1:
                model = torch.nn.parallel.DistributedDataParallel(
                    model, device_ids=[info.device.index] if info.device.type == "cuda" else None
                )
            opt = torch.optim.AdamW(
                model.parameters(), lr=config.optimizer.lr, weight_decay=config.optimizer.weight_decay
            )
            data = SyntheticTokens(
                config.model.vocab_size, tc.micro_batch_size, tc.seq_length, tc.seed + info.rank, info.device
            )
            if info.rank == 0:
                log.info("training %d steps on %d rank(s), device %s", tc.train_iters, info.world_size, info.device)
            t_last = time.perf_counter()
            for step in range(tc.train_iters):
                with controller.step(step):
                    with torch.profiler.record_function("get_batch"):  # Megatron's name: input_bound reads it
                        _slow_input(tc, step)
                        tokens = data.next()
                    loss = train_step(model, opt, data, tokens)
                    if tc.sync_every_step:
                        loss.item()
                if (step + 1) % tc.log_interval == 0 or step == tc.train_iters - 1:
                    value = loss.item()
                    now = time.perf_counter()
                    n = tc.log_interval if (step + 1) % tc.log_interval == 0 else (step + 1) % tc.log_interval
                    losses.append(value)
                    if info.rank == 0:
                        log.info("step %d | loss %.4f | step time %.1f ms", step, value, 1000 * (now - t_last) / n)
                    t_last = now
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    return {"final_loss": losses[-1] if losses else None, "artifacts": [str(p) for p in controller.artifacts]}


def _slow_input(tc, step: int) -> None:
    """The problems ``diagnose`` finds, injected on request (train.data_delay_ms, data_delay_steps)."""
    if tc.data_delay_ms and (tc.data_delay_steps is None or step in tc.data_delay_steps):
        time.sleep(tc.data_delay_ms / 1000)


def _configure_logging() -> None:
    root = logging.getLogger()
    if not root.handlers:
        rank = os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0"))
        logging.basicConfig(
            level=logging.INFO, stream=sys.stdout, format=f"[rank{rank}] %(levelname)s %(name)s: %(message)s"
        )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in argv):
        from recipes.overrides import describe_keys

        try:
            print(
                "usage: python -m recipes.train [key=value ...]\n\n"
                'Values are YAML (true, 3, [0,1], null, "a string"). Keys, with type and default:\n  '
                + "\n  ".join(describe_keys()),
                flush=True,
            )
        except BrokenPipeError:  # `--help | head`: the reader left, which is fine
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
    try:
        config = parse_overrides(argv)
    except OverrideError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if config.train.device == "cuda" and not torch.cuda.is_available():
        print("error: train.device=cuda, but CUDA is not available here; use train.device=auto or cpu", file=sys.stderr)
        return 2
    filter_kineto_markers()
    pretrain(config)
    return 0


if __name__ == "__main__":
    sys.exit(main())
