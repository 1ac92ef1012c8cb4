"""Nsight Systems backend: cudaProfilerStart/Stop around the window, one NVTX range per step.

The launch side runs ``nsys profile --capture-range=cudaProfilerApi --capture-range-end=stop``,
so nsys records only between our cudaProfilerStart and cudaProfilerStop: exactly the window.
Each step gets an NVTX range ``step <N>`` (global step number), so the nsys timeline shows step
boundaries. Per-op NVTX ranges (torch's ``emit_nvtx``, one range per autograd op) cost a lot on
large models, so they are on only with ``nvtx_per_op`` or ``record_shapes`` (which needs them to
carry shapes); see benchmarks/ for the measured cost.
"""

from __future__ import annotations

import contextlib
import logging

import torch

from bridge_plugins.runtime.backend import Backend, BackendContext

log = logging.getLogger("bridge_plugins")


def nvtx_available() -> bool:
    """NVTX exists in CUDA builds of torch, with or without a GPU; CPU-only wheels lack it."""
    try:
        torch.cuda.nvtx.range_push("bridge_plugins.probe")
        torch.cuda.nvtx.range_pop()
        return True
    except Exception:
        return False


class NsysBackend(Backend):
    name = "nsys"

    def __init__(self, ctx: BackendContext):
        super().__init__(ctx)
        cfg = ctx.cfg
        self.cuda = torch.cuda.is_available()
        self.nvtx = nvtx_available()
        self.per_op = cfg.nvtx_per_op or cfg.record_shapes
        self._emit_nvtx = contextlib.ExitStack()
        self.ranges_emitted = 0
        """NVTX step ranges pushed so far (a count the logs and tests can read)."""
        self.capture_started = False

    def on_enter(self) -> None:
        if not self.cuda:
            log.warning(
                "rank %d: nsys profiling requested but CUDA is not available: cudaProfilerStart/Stop are skipped "
                "(nsys with --capture-range=cudaProfilerApi will record nothing); %s; training continues",
                self.rank,
                "NVTX step ranges are still emitted"
                if self.nvtx
                else "this torch build has no NVTX, so no step ranges either",
            )

    def window_begin(self, step: int) -> None:
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            self.capture_started = True
        if self.per_op and self.nvtx:
            self._emit_nvtx.enter_context(torch.autograd.profiler.emit_nvtx(record_shapes=self.cfg.record_shapes))

    def step_begin(self, step: int, first: bool) -> None:
        if self.nvtx:
            torch.cuda.nvtx.range_push(f"step {step}")
            self.ranges_emitted += 1

    def step_end(self, step: int) -> None:
        if self.nvtx:
            torch.cuda.nvtx.range_pop()

    def window_end(self, first: int, last: int, sync: bool) -> None:
        self._emit_nvtx.close()
        if self.capture_started:
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
            self.capture_started = False
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
