"""Fixtures of the window tests (window_support.py)."""

from __future__ import annotations

import pytest

from bridge_plugins.runtime import registry
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
