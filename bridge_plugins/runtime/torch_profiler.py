"""PyTorch profiler backend: one gzip Chrome trace per rank per window.

The window drives the profiler step by step rather than with ``torch.profiler.schedule``, whose
cycles count from the profiler's own step 0 (Megatron Bridge's ``wait=start-1, warmup=1`` records
one step early): recording starts at the window's first step with ``step_num`` set to the global
step, so ``ProfilerStep#N`` carries global step numbers and the trace holds exactly the window.
A profiler session the user opened around the loop is left alone (our window is skipped, with a warning).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator

import torch
from torch.profiler import ProfilerAction, ProfilerActivity

from bridge_plugins.jobdir.names import TORCH_TRACE_DIR, TORCH_TRACE_SUFFIX, torch_trace_stem
from bridge_plugins.runtime.backend import Backend, BackendContext
from bridge_plugins.runtime.trace_metadata import add_distributed_info, add_window_metadata
from bridge_plugins.runtime.verify import (
    KINETO_FOOTER,
    check_gzip_complete,
    check_json_complete,
    check_kineto_header,
    gzip_file,
)

log = logging.getLogger("bridge_plugins")

KINETO_REWRITES = ("\\", "\n")
"""Characters kineto changes in an export path (see ``kineto_safe_path``)."""


def _always_record(step: int) -> ProfilerAction:
    """A schedule that records every step; the controller decides when to start and stop."""
    return ProfilerAction.RECORD


def profiler_already_running() -> bool:
    """Whether a torch.profiler / autograd profiler session is active in this process."""
    return bool(torch.autograd.profiler._is_profiler_enabled or torch._C._autograd._profiler_enabled())


@contextlib.contextmanager
def kineto_safe_path(path: str) -> Iterator[str]:
    """A name for ``path`` that kineto writes to unchanged.

    kineto writes ``<path>.tmp`` and then renames it to ``path`` with every backslash turned into
    '/' and newlines dropped, so in a directory whose name holds either the trace is lost. Through
    ``/proc/self/fd/<fd of the directory>/<file name>`` the name it rewrites holds neither (our
    file names never do). Without /proc such a path is refused, naming the character.
    """
    directory, name = os.path.split(path)
    if not any(c in path for c in KINETO_REWRITES):
        yield path
        return
    if any(c in name for c in KINETO_REWRITES) or not os.path.isdir("/proc/self/fd"):
        bad = next(c for c in KINETO_REWRITES if c in path)
        raise ValueError(f"the path holds {bad!r}, which torch.profiler's writer rewrites (the trace would be lost)")
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{name}"
    finally:
        os.close(fd)


def export_gzip_trace(prof: torch.profiler.profile, path: str) -> None:
    """Write ``prof``'s Chrome trace to ``path`` (.gz), checked at every stage.

    torch's own .gz export writes the JSON to $TMPDIR, ignores a failed write there and gzips
    whatever it got; here the JSON goes beside ``path`` (a private staging directory), is checked
    complete, compressed by us (errors raise), and removed.
    """
    json_path = path[: -len(".gz")]
    try:
        with kineto_safe_path(json_path) as export_path:
            prof.export_chrome_trace(export_path)
        check_json_complete(json_path, KINETO_FOOTER)
        check_kineto_header(json_path)
        gzip_file(json_path, path)
    finally:
        if os.path.lexists(json_path):
            os.unlink(json_path)


class TorchProfilerBackend(Backend):
    name = "pytorch profiler"

    def __init__(self, ctx: BackendContext):
        super().__init__(ctx)
        self.trace_dir = ctx.output_dir / TORCH_TRACE_DIR
        self.prof: torch.profiler.profile | None = None
        self._thread: threading.Thread | None = None

    def window_begin(self, step: int) -> None:
        if profiler_already_running():
            log.warning(
                "rank %d: a torch.profiler session opened outside bridge_plugins is running: it is left alone and "
                "this window (from step %d) writes no PyTorch trace; your session records these steps",
                self.rank,
                step,
            )
            return
        cfg = self.cfg
        activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        self.prof = torch.profiler.profile(
            activities=activities,
            schedule=_always_record,
            # Megatron Bridge's names for the same switches count too
            record_shapes=cfg.record_shapes or cfg.pytorch_profiler_collect_shapes,
            with_stack=cfg.pytorch_profiler_with_stack or cfg.pytorch_profiler_collect_callstack,
            profile_memory=cfg.pytorch_profiler_profile_memory,
            # acc_events stays False: with it, stop() builds every FunctionEvent in Python on the
            # training thread (11.8 s instead of 0.34 s measured for a 5-step window)
        )
        self.prof.step_num = step
        self.prof.start()
        add_distributed_info(self.prof, self.ctx)

    def step_begin(self, step: int, first: bool) -> None:
        if not first and self.prof is not None:
            self.prof.step_num = step - 1  # step() adds one; this keeps N global even if steps skip
            self.prof.step()

    def window_end(self, first: int, last: int, sync: bool) -> None:
        """Stop recording and write the trace: in a background thread unless ``sync``.

        Exporting takes seconds for a large window (JSON of every event, then gzip) while the
        other ranks wait in the next collective, long enough for NCCL watchdog timeouts when
        only some ranks profile. Only ``stop()`` must run on the training thread; the export
        runs beside training and is joined when the controller exits (or on SIGTERM).
        """
        prof, self.prof = self.prof, None
        if prof is None:
            return
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            # the window's last step ends on the GPU inside the trace: no kernel of it is cut off
            # (HTA drops a trace's last step by default for that reason; ours always counts)
            torch.cuda.synchronize()
        add_window_metadata(prof, self.ctx, first, last)
        prof.stop()
        stem = torch_trace_stem(self.rank, first, last, trigger=self.ctx.trigger)
        if sync or not self.cfg.background_export:
            self._export(prof, stem)
            return
        self.join()
        self._thread = threading.Thread(
            target=self._export_logged, args=(prof, stem), name=f"bridge_plugins-export-rank{self.rank}"
        )
        self._thread.start()

    def _export(self, prof: torch.profiler.profile, stem: str) -> None:
        self.ctx.writer.write(
            "PyTorch trace",
            self.trace_dir,
            stem,
            TORCH_TRACE_SUFFIX,
            lambda tmp: export_gzip_trace(prof, tmp),
            check=check_gzip_complete,
        )

    def _export_logged(self, prof: torch.profiler.profile, stem: str) -> None:
        try:
            self._export(prof, stem)
        except Exception as e:  # a thread's exception would only print a traceback; say what failed
            log.error("rank %d: %s; training continues", self.rank, e)

    def join(self) -> None:
        """Wait for a background export to finish (the controller holds signals meanwhile)."""
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()

    def on_exit(self) -> None:
        self.join()

    def abort(self) -> None:
        prof, self.prof = self.prof, None
        if prof is not None:
            prof.stop()
