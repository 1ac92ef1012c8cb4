"""A small decoder-only transformer in plain torch, and synthetic token data.

Small enough to train 20 steps on 2 CPU cores in seconds, real enough that a profile shows
attention, MLP, layer norm, embedding, loss, backward and optimizer kernels.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from recipes.config import ModelConfig


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        if cfg.hidden_size % cfg.num_heads:
            raise ValueError(
                f"model.hidden_size={cfg.hidden_size} must be divisible by model.num_heads={cfg.num_heads}"
            )
        self.num_heads = cfg.num_heads
        self.qkv = nn.Linear(cfg.hidden_size, 3 * cfg.hidden_size)
        self.proj = nn.Linear(cfg.hidden_size, cfg.hidden_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        shape = (b, t, self.num_heads, c // self.num_heads)
        q, k, v = (y.view(shape).transpose(1, 2) for y in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.hidden_size)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.hidden_size)
        width = cfg.ffn_multiplier * cfg.hidden_size
        self.mlp = nn.Sequential(nn.Linear(cfg.hidden_size, width), nn.GELU(), nn.Linear(width, cfg.hidden_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    """Token + position embeddings, N pre-norm blocks, tied output head."""

    def __init__(self, cfg: ModelConfig, max_seq_length: int):
        super().__init__()
        self.tok = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.pos = nn.Embedding(max_seq_length, cfg.hidden_size)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.num_layers))
        self.ln_f = nn.LayerNorm(cfg.hidden_size)
        self.apply(self._init)

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        t = tokens.shape[1]
        x = self.tok(tokens) + self.pos(torch.arange(t, device=tokens.device))
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x) @ self.tok.weight.t()


def loss_fn(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Next-token cross entropy."""
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))


class SyntheticTokens:
    """Deterministic token batches: a fixed seed per rank, so runs are reproducible.

    The sequences follow a simple learnable rule (each token is the previous plus a per-sequence
    stride, mod vocab) so the loss visibly falls.
    """

    def __init__(self, vocab_size: int, batch: int, seq_length: int, seed: int, device: torch.device):
        self.vocab_size, self.batch, self.seq_length, self.device = vocab_size, batch, seq_length, device
        self.gen = torch.Generator().manual_seed(seed)

    def next(self) -> torch.Tensor:
        start = torch.randint(0, self.vocab_size, (self.batch, 1), generator=self.gen)
        stride = torch.randint(1, 4, (self.batch, 1), generator=self.gen)
        tokens = (start + stride * torch.arange(self.seq_length)) % self.vocab_size
        return tokens.to(self.device)


def build_training(
    cfg: ModelConfig,
    seq_length: int,
    batch: int,
    device: torch.device,
    seed: int = 0,
    lr: float = 3e-3,
    weight_decay: float = 0.01,
):
    """A TinyGPT on ``device``, its AdamW and its synthetic data: (model, optimizer, data)."""
    model = TinyGPT(cfg, seq_length).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    return model, opt, SyntheticTokens(cfg.vocab_size, batch, seq_length, seed, device)


def train_step(
    model: nn.Module, opt: torch.optim.Optimizer, data: SyntheticTokens, tokens: torch.Tensor | None = None
) -> torch.Tensor:
    """One training iteration on ``tokens`` (the next batch of ``data`` when None); returns the loss
    (not synchronized)."""
    tokens = data.next() if tokens is None else tokens
    loss = loss_fn(model(tokens), tokens)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss
