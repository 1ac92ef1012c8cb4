"""CUDA memory-history backend: record from start-up, snapshot per rank when the window ends.

Recording starts at controller entry (so parameters and optimizer state are in the history), keeps
Python stacks only (C++ stacks make a dump take minutes) and is capped at
``memory_history_max_entries`` events. The snapshot (pickle protocol 4, which memory_viz reads) is
``<stem>_<rank><suffix>``; then recording stops unless another window still records
(``memory_recorder``). An out-of-memory error while recording dumps ``<stem>_oom_rank<rank><suffix>``.
"""

from __future__ import annotations

import logging
import pickle

import torch

from bridge_plugins.jobdir.names import oom_snapshot_stem, snapshot_stem, split_suffix
from bridge_plugins.runtime import memory_recorder
from bridge_plugins.runtime.backend import Backend, BackendContext
from bridge_plugins.runtime.paths import resolve_snapshot_path

log = logging.getLogger("bridge_plugins")


def can_record() -> bool:
    """Whether this process can record memory history: it records the CUDA caching allocator."""
    return torch.cuda.is_available()


class MemoryHistoryBackend(Backend):
    name = "memory history"

    def __init__(self, ctx: BackendContext):
        super().__init__(ctx)
        path = resolve_snapshot_path(ctx.cfg, ctx.output_dir)
        self.directory = path.parent
        self.stem, self.suffix = split_suffix(path.name)
        self.recording = False

    def on_enter(self) -> None:
        first = self.directory / f"{snapshot_stem(self.stem, self.rank, trigger=self.ctx.trigger)}{self.suffix}"
        if not can_record():  # one line, not "snapshots go to X" followed by "no snapshot"
            log.warning(
                "rank %d: record_memory_history requested but CUDA is not available: no memory snapshot will be "
                "written (it would have gone to %s; memory history records the CUDA caching allocator); "
                "training continues",
                self.rank,
                first,
            )
            return
        log.info("rank %d: memory snapshots go to %s", self.rank, first)
        memory_recorder.RECORDER.start(self.cfg.memory_history_max_entries, self._on_oom)
        self.recording = True

    def _on_oom(self) -> None:
        """Called by the shared recorder, only while this window records."""
        try:
            self._dump(oom_snapshot_stem(self.stem, self.rank), "OOM memory snapshot")
        except Exception as e:  # the OOM itself must reach the training loop, not our failure
            log.error("rank %d: writing the OOM memory snapshot failed: %s", self.rank, e)

    def _dump(self, stem: str, what: str) -> None:
        snapshot = torch.cuda.memory._snapshot()

        def produce(tmp: str) -> None:
            with open(tmp, "wb") as f:
                pickle.dump(snapshot, f, protocol=4)

        self.ctx.writer.write(what, self.directory, stem, self.suffix, produce)

    def window_end(self, first: int, last: int, sync: bool) -> None:
        self.snapshot_and_stop()

    def snapshot_and_stop(self) -> None:
        if not self.recording:
            return
        try:
            self._dump(snapshot_stem(self.stem, self.rank, trigger=self.ctx.trigger), "memory snapshot")
        finally:
            self.abort()

    def on_exit(self) -> None:
        self.snapshot_and_stop()

    def abort(self) -> None:
        """Stop recording for this window, without a snapshot."""
        if self.recording:
            self.recording = False
            memory_recorder.RECORDER.stop(self._on_oom)
