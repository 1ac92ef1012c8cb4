"""PyTorch profiler backend: one gzip Chrome trace per rank per window.

The profiler is driven step by step by the controller, not by ``torch.profiler.schedule``
arithmetic: a schedule counts cycles from the profiler's own step 0 (so a window 2..6 built with
``schedule(wait=0, warmup=0, active=4)`` records only 4 and 5), and Megatron Bridge's
``wait=start-1, warmup=1`` records one step early. Here the profiler starts recording at the
window's first step with ``step_num`` set to the global step, so its ``ProfilerStep#N``
annotations carry the global step numbers and the trace holds exactly the steps that ran.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import torch
from torch.profiler import ProfilerAction, ProfilerActivity

from bridge_plugins.config import ProfilingConfig
from bridge_plugins.runtime.artifacts import TORCH_TRACE_DIR, TORCH_TRACE_SUFFIX, ArtifactWriter, restart_tag


def _always_record(step: int) -> ProfilerAction:
    """A schedule that records every step; the controller decides when to start and stop."""
    return ProfilerAction.RECORD


class TorchProfilerBackend:
    name = "pytorch profiler"

    def __init__(self, cfg: ProfilingConfig, rank: int, output_dir: Path, writer: ArtifactWriter):
        self.cfg, self.rank, self.writer = cfg, rank, writer
        self.trace_dir = output_dir / TORCH_TRACE_DIR
        self.prof: Optional[torch.profiler.profile] = None

    def on_enter(self) -> None:
        pass

    def window_begin(self, step: int) -> None:
        activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        self.prof = torch.profiler.profile(
            activities=activities,
            schedule=_always_record,
            record_shapes=self.cfg.record_shapes,
            with_stack=self.cfg.pytorch_profiler_with_stack,
            profile_memory=self.cfg.pytorch_profiler_profile_memory,
        )
        self.prof.step_num = step
        self.prof.start()

    def step_begin(self, step: int, first: bool) -> None:
        if not first:
            self.prof.step_num = step - 1  # step() adds one; this keeps N global even if steps skip
            self.prof.step()

    def step_end(self, step: int) -> None:
        pass

    def window_end(self, first: int, last: int) -> None:
        prof, self.prof = self.prof, None
        if prof is None:
            return
        prof.stop()
        stem = f"rank{self.rank}_steps{first}-{last}{restart_tag()}"
        self.writer.write("PyTorch trace", self.trace_dir, stem, TORCH_TRACE_SUFFIX, prof.export_chrome_trace)

    def on_exit(self) -> None:
        pass

    def abort(self) -> None:
        prof, self.prof = self.prof, None
        if prof is not None:
            prof.stop()
