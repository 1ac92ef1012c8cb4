"""ConfigContainer: every setting of the example training job, one dataclass section each.

Shaped like Megatron Bridge's ConfigContainer (a ``profiling`` section of type
``ProfilingConfig`` and an ``ft`` section with ``enable_ft_package``), so the plugins and the
controller work the same on ours and on theirs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from bridge_plugins.config.profiling import ProfilingConfig


@dataclass
class ModelConfig:
    """A small decoder-only transformer."""

    vocab_size: int = 256
    """Tokens in the vocabulary."""
    hidden_size: int = 64
    """Width of the residual stream."""
    num_layers: int = 2
    """Transformer blocks."""
    num_heads: int = 4
    """Attention heads per block."""
    ffn_multiplier: int = 4
    """MLP width as a multiple of hidden_size."""

    def __post_init__(self) -> None:
        for name in ("vocab_size", "hidden_size", "num_layers", "num_heads", "ffn_multiplier"):
            if getattr(self, name) < 1:
                raise ValueError(f"model.{name}={getattr(self, name)} must be >= 1")
        if self.hidden_size % self.num_heads:
            raise ValueError(
                f"model.hidden_size={self.hidden_size} must be divisible by model.num_heads={self.num_heads}"
            )


@dataclass
class TrainingConfig:
    """The loop: how long, how big, how often to log."""

    train_iters: int = 20
    """Training iterations (steps 0 .. train_iters-1)."""
    micro_batch_size: int = 4
    """Sequences per rank per step."""
    seq_length: int = 64
    """Tokens per sequence."""
    seed: int = 1234
    """Seed for the model init and the synthetic data (each rank offsets it by its rank)."""
    log_interval: int = 5
    """Print a log line every this many steps (and on the last step)."""
    device: str = "auto"
    """'auto' (CUDA when present, else CPU), 'cpu' or 'cuda'."""
    sync_every_step: bool = False
    """Read the loss with .item() inside every step: a host-device sync (what `diagnose` calls sync_point)."""
    data_delay_ms: float = 0.0
    """Make the data loader this slow per batch: an input-bound run (what `diagnose` calls input_bound)."""
    data_delay_steps: list[int] | None = None
    """Steps that get data_delay_ms (None: every step); one slow step is what `diagnose` calls step_variance."""

    def __post_init__(self) -> None:
        if self.data_delay_ms < 0:
            raise ValueError(f"train.data_delay_ms={self.data_delay_ms} must be >= 0")
        if self.device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"train.device={self.device!r}: use 'auto', 'cpu' or 'cuda'")
        for name in ("train_iters", "micro_batch_size", "seq_length", "log_interval"):
            if getattr(self, name) < 1:
                raise ValueError(f"train.{name}={getattr(self, name)} must be >= 1")


@dataclass
class OptimizerConfig:
    """AdamW."""

    lr: float = 3e-3
    """Learning rate."""
    weight_decay: float = 0.01
    """Decoupled weight decay."""

    def __post_init__(self) -> None:
        for name in ("lr", "weight_decay"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"optimizer.{name}={value} must be a finite number >= 0")


@dataclass
class FaultToleranceConfig:
    """Megatron Bridge's fault-tolerance section; only the switch matters here."""

    enable_ft_package: bool = False
    """True when the job runs under nvidia-resiliency-ext's ft_launcher (disables nsys)."""
    calc_ft_timeouts: bool = False
    """Megatron Bridge's switch for computed heartbeat timeouts; set by FaultTolerancePlugin, unused by this job."""


@dataclass
class ConfigContainer:
    """The whole job configuration."""

    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainingConfig = field(default_factory=TrainingConfig)
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    ft: FaultToleranceConfig = field(default_factory=FaultToleranceConfig)
    profiling: ProfilingConfig = field(default_factory=ProfilingConfig)
