"""Fixtures the split tests share."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge_plugins.analysis.trace import split


@pytest.fixture
def rereads(monkeypatch) -> list[Path]:
    """The files read in one process by collect_trace: read again after a split read gave up (or
    read with jobs=1: check it before that)."""
    seen: list[Path] = []
    real = split.read_trace

    def spy(path, *args):
        seen.append(Path(path))
        return real(path, *args)

    monkeypatch.setattr(split, "read_trace", spy)
    return seen
