"""CUDA memory-history backend: record from start-up, snapshot per rank when the window ends.

Recording starts when the controller is entered (before the model exists, so parameter and
optimizer allocations are in the history), keeps Python stacks only (C++ stacks make a dump take
minutes), and is capped at ``memory_history_max_entries`` events. The snapshot is pickled with
protocol 4, which PyTorch's memory_viz page reads, as ``<stem>_<rank><suffix>``; then recording
stops, so the rest of training pays nothing. An out-of-memory error at any time while recording
dumps ``<stem>_oom_rank<rank><suffix>``.
"""

from __future__ import annotations

import logging
import pickle
from pathlib import Path
from typing import Optional

import torch

from bridge_plugins.config import ProfilingConfig
from bridge_plugins.artifact_names import oom_snapshot_stem, snapshot_stem, split_suffix
from bridge_plugins.runtime.artifacts import ArtifactWriter

log = logging.getLogger("bridge_plugins")


def snapshot_path(cfg: ProfilingConfig, output_dir: Path) -> Path:
    """memory_snapshot_path, resolved under output_dir when relative."""
    p = Path(cfg.memory_snapshot_path).expanduser()
    return p if p.is_absolute() else output_dir / p


class MemoryHistoryBackend:
    name = "memory history"

    def __init__(
        self, cfg: ProfilingConfig, rank: int, output_dir: Path, writer: ArtifactWriter, trigger: Optional[int] = None
    ):
        self.cfg, self.rank, self.writer, self.trigger = cfg, rank, writer, trigger
        path = snapshot_path(cfg, output_dir)
        self.directory = path.parent
        self.stem, self.suffix = split_suffix(path.name)
        self.recording = False

    def on_enter(self) -> None:
        log.info("rank %d: memory snapshots go to %s", self.rank, self.directory / f"{snapshot_stem(self.stem, self.rank, trigger=self.trigger, environ={})}{self.suffix}")
        if not torch.cuda.is_available():
            log.warning(
                "rank %d: record_memory_history requested but CUDA is not available: no memory snapshot will be "
                "written (it records the CUDA caching allocator); training continues",
                self.rank,
            )
            return
        torch.cuda.memory._record_memory_history(
            enabled="all", context="all", stacks="python", max_entries=self.cfg.memory_history_max_entries
        )
        self.recording = True
        torch._C._cuda_attach_out_of_memory_observer(self._on_oom)

    def _on_oom(self, device, alloc, device_alloc, device_free) -> None:
        if not self.recording:
            return
        try:
            self._dump(oom_snapshot_stem(self.stem, self.rank), "OOM memory snapshot")
        except Exception as e:  # the OOM itself must reach the training loop, not our failure
            log.error("rank %d: writing the OOM memory snapshot failed: %s", self.rank, e)

    def _dump(self, stem: str, what: str) -> None:
        snapshot = torch.cuda.memory._snapshot()

        def produce(tmp: str) -> None:
            with open(tmp, "wb") as f:
                pickle.dump(snapshot, f, protocol=4)

        self.writer.write(what, self.directory, stem, self.suffix, produce)

    def window_begin(self, step: int) -> None:
        pass

    def step_begin(self, step: int, first: bool) -> None:
        pass

    def step_end(self, step: int) -> None:
        pass

    def window_end(self, first: int, last: int, sync: bool) -> None:
        self.snapshot_and_stop()

    def snapshot_and_stop(self) -> None:
        if not self.recording:
            return
        try:
            self._dump(snapshot_stem(self.stem, self.rank, trigger=self.trigger), "memory snapshot")
        finally:
            self.recording = False
            torch.cuda.memory._record_memory_history(enabled=None)

    def on_exit(self) -> None:
        self.snapshot_and_stop()

    def abort(self) -> None:
        if self.recording:
            self.recording = False
            torch.cuda.memory._record_memory_history(enabled=None)
