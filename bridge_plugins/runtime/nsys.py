"""Nsight Systems backend: the window as NVTX range and CUDA capture range, one NVTX range per step.

With a GPU, cudaProfilerStart/Stop around the window open and close nsys' capture
(``--capture-range=cudaProfilerApi``); without one, the launch wrapper captures the NVTX range
``bridge_plugins.window`` pushed here. Each step is the NVTX range ``ProfilerStep#<N>``
(docs/formats.md). Per-op NVTX ranges (``emit_nvtx``) cost a lot on large models: only with
``nvtx_per_op`` or ``record_shapes`` (benchmarks/ has the measured cost).
"""

from __future__ import annotations

import contextlib
import logging

import torch

from bridge_plugins.jobdir.names import NSYS_STEP_RANGE, NSYS_WINDOW_RANGE
from bridge_plugins.runtime.backend import Backend, BackendContext
from bridge_plugins.runtime.nvtx_ranges import find_nvtx

log = logging.getLogger("bridge_plugins")


class NsysBackend(Backend):
    name = "nsys"

    def __init__(self, ctx: BackendContext):
        super().__init__(ctx)
        cfg = ctx.cfg
        self.cuda = torch.cuda.is_available()
        self.ranges = find_nvtx()
        self.nvtx = self.ranges.available
        self.per_op = cfg.nvtx_per_op or cfg.record_shapes
        self._emit_nvtx = contextlib.ExitStack()
        self.ranges_emitted = 0
        """NVTX step ranges pushed so far (a count the logs and tests can read)."""
        self.capture_started = False
        self.window_range_open = False

    def on_enter(self) -> None:
        if not self.cuda:
            log.warning(
                "rank %d: nsys profiling but CUDA is not available: cudaProfilerStart/Stop are skipped; %s; training continues",
                self.rank,
                f"nsys captures the window's NVTX range {NSYS_WINDOW_RANGE!r} (the launch wrapper's CPU capture "
                f"range) with one NVTX range per step (from {self.ranges.source})"
                if self.nvtx
                else "there is no NVTX here either (pip install nvtx), so nsys will record nothing",
            )

    def window_begin(self, step: int) -> None:
        if self.nvtx:
            self.ranges.push(NSYS_WINDOW_RANGE)
            self.window_range_open = True
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            self.capture_started = True
        if self.per_op and self.nvtx:
            self._emit_nvtx.enter_context(torch.autograd.profiler.emit_nvtx(record_shapes=self.cfg.record_shapes))

    def step_begin(self, step: int, first: bool) -> None:
        if self.nvtx:
            self.ranges.push(NSYS_STEP_RANGE.format(step=step))
            self.ranges_emitted += 1

    def step_end(self, step: int) -> None:
        if self.nvtx:
            self.ranges.pop()

    def window_end(self, first: int, last: int, sync: bool) -> None:
        self._emit_nvtx.close()
        if self.capture_started:
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
            self.capture_started = False
        self._close_window_range()
        log.info(
            "rank %d: nsys capture range closed after steps %d-%d (%d NVTX step ranges)",
            self.rank,
            first,
            last,
            self.ranges_emitted,
        )

    def abort(self) -> None:
        self._emit_nvtx.close()
        if self.capture_started:
            self.capture_started = False
            torch.cuda.profiler.stop()
        self._close_window_range()

    def _close_window_range(self) -> None:
        """Pop the window's NVTX range (which ends an nvtx capture range, and so the nsys capture)."""
        if self.window_range_open:
            self.window_range_open = False
            self.ranges.pop()
