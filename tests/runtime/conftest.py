"""Fixtures of the runtime tests: the window tests' recorders (window_support.py), one real training step."""

from __future__ import annotations

import pytest
import torch

from bridge_plugins.runtime import registry
from recipes.config import ModelConfig
from recipes.model import build_training
from recipes.model import train_step as recipe_train_step
from tests.runtime.window_support import CALLS, Recorder


@pytest.fixture
def recorders(monkeypatch):
    """Two Recorder backends after the real ones, on every window; yields their calls."""
    here = "tests.runtime.window_support:"
    entries = (registry.Entry(lambda c: True, here + "Recorder"), registry.Entry(lambda c: True, here + "Second"))
    monkeypatch.setattr(registry, "BACKENDS", registry.BACKENDS + entries)
    monkeypatch.setattr(Recorder, "fail_in", None)
    monkeypatch.setattr(Recorder, "watch", None)
    CALLS.clear()
    yield CALLS
    CALLS.clear()


@pytest.fixture(scope="module")
def train_step():
    """One real training iteration of a very small TinyGPT."""
    torch.manual_seed(0)
    model, opt, data = build_training(
        ModelConfig(hidden_size=32, num_layers=1, num_heads=2), 16, 2, torch.device("cpu")
    )
    return lambda: recipe_train_step(model, opt, data)
