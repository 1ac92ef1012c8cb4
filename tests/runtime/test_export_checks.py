"""The PyTorch trace export refuses a JSON file that kineto left short (it does not report write
errors): nothing is compressed or published from it."""

from __future__ import annotations

import os

import pytest
import torch

from bridge_plugins.runtime.torch_profiler import export_gzip_trace


class _ShortExport:
    """A real profile whose exported JSON is then cut short, as a full disk leaves it."""

    def __init__(self, prof):
        self.prof = prof

    def export_chrome_trace(self, path):
        self.prof.export_chrome_trace(path)
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 2)


def test_a_short_trace_is_refused_before_compression(tmp_path):
    with torch.profiler.profile() as prof:
        torch.ones(4).add_(1)
    target = tmp_path / "t.pt.trace.json.gz"
    with pytest.raises(ValueError, match="incomplete file"):
        export_gzip_trace(_ShortExport(prof), str(target))
    assert list(tmp_path.iterdir()) == []
