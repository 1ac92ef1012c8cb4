"""Chakra execution trace backend (``pytorch_profiler_collect_chakra``): one per rank per window.

torch.profiler.ExecutionTraceObserver records every operator with its inputs, outputs and
dependencies (MLCommons Chakra, for replay and simulation), writing its JSON while it runs: so it
records into a private staging directory and is published like the Kineto trace, beside it
(``rank<R>_steps<A>-<B>.chakra.json``). It opens before the PyTorch profiler and closes after it
(registry order), so exactly the window's ``ProfilerStep#N`` nodes are in it.
"""

from __future__ import annotations

import os

from torch.profiler import ExecutionTraceObserver

from bridge_plugins.jobdir.atomic_write import StagedFile
from bridge_plugins.jobdir.names import CHAKRA_TRACE_SUFFIX, TORCH_TRACE_DIR, torch_trace_stem
from bridge_plugins.runtime.backend import Backend, BackendContext
from bridge_plugins.runtime.verify import EXECUTION_TRACE_FOOTER, check_json_complete

WHAT = "Chakra execution trace"


class ChakraBackend(Backend):
    name = "chakra execution trace"

    def __init__(self, ctx: BackendContext):
        super().__init__(ctx)
        self.trace_dir = ctx.output_dir / TORCH_TRACE_DIR
        self.observer: ExecutionTraceObserver | None = None
        self.staging: StagedFile | None = None

    def window_begin(self, step: int) -> None:
        self.staging = self.ctx.writer.stage(WHAT, self.trace_dir, f"rank{self.rank}_chakra", CHAKRA_TRACE_SUFFIX)
        self._recording = self.staging.staging / "execution_trace.json"
        self.observer = ExecutionTraceObserver().register_callback(str(self._recording))
        self.observer.start()

    def window_end(self, first: int, last: int, sync: bool) -> None:
        observer, self.observer = self.observer, None
        if observer is None:
            return
        observer.stop()

        def produce(tmp: str) -> None:
            observer.unregister_callback()  # finishes the JSON
            os.rename(self._recording, tmp)

        staging, self.staging = self.staging, None
        assert staging is not None  # set in window_begin, which started the observer
        self.ctx.writer.publish(
            WHAT,
            staging,
            self.trace_dir,
            torch_trace_stem(self.rank, first, last, trigger=self.ctx.trigger),
            CHAKRA_TRACE_SUFFIX,
            produce,
            check=lambda path: check_json_complete(path, EXECUTION_TRACE_FOOTER),
        )

    def abort(self) -> None:
        observer, self.observer = self.observer, None
        if observer is not None:
            observer.stop()
            observer.unregister_callback()
        if self.staging is not None:
            self.staging.discard()
            self.staging = None
