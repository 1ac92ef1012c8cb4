"""What the window tests share: ``run`` (steps through a real controller, returns what it said and
which steps it scoped) and ``Recorder``, a stand-in for a profiler: a Backend that only notes its
calls (a real profiler's effects are checked in test_controller.py)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from bridge_plugins import ProfilingConfig, ProfilingController
from bridge_plugins.runtime.backend import Backend
from bridge_plugins.runtime.steps import NOOP


def run(tmp_path, caplog, steps, start, end, rank=0, ranks=(), fail_at=None, on_step=None, **fields):
    """Run ``steps`` through a controller with window [start, end) (memory history, plus ``fields``);
    returns (controller, log lines, the steps whose ``with ctl.step(i)`` got a scope other than the
    shared no-op)."""
    cfg = ProfilingConfig(
        record_memory_history=True,
        profile_step_start=start,
        profile_step_end=end,
        profile_ranks=list(ranks),
        **{"output_dir": str(tmp_path), **fields},
    )
    caplog.set_level(logging.INFO, logger="bridge_plugins")
    scoped = []
    ctl = ProfilingController(cfg, rank=rank, world_size=4)
    try:
        with ctl:
            for i in steps:
                scope = ctl.step(i)
                if scope is not NOOP:
                    scoped.append(i)
                with scope:
                    if on_step is not None:
                        on_step(i)
                    if i == fail_at:
                        raise ValueError(f"boom at {i}")
    except ValueError:
        pass
    lines = [r.getMessage() for r in caplog.records if "CUDA is not available" not in r.getMessage()]
    return ctl, lines, scoped


CALLS: list[tuple] = []


class Recorder(Backend):
    """Stand-in for a profiler: notes every call in CALLS."""

    name = "recorder"
    fail_in: str | None = None  # the method that raises, for the failure-isolation test
    watch: Callable[[Recorder, str], None] | None = None  # called after each noted call, for tests that look around

    def __init__(self, ctx):
        super().__init__(ctx)
        CALLS.append((self.name, "init", ctx.rank, ctx.world_size, ctx.output_dir, ctx.trigger, ctx.writer.root))

    def _note(self, *call):
        CALLS.append((self.name, *call))
        if Recorder.watch is not None:
            Recorder.watch(self, call[0])
        if call[0] == self.fail_in:
            raise RuntimeError("planted")

    def on_enter(self):
        self._note("on_enter")

    def window_begin(self, step):
        self._note("window_begin", step)

    def step_begin(self, step, first):
        self._note("step_begin", step, first)

    def step_end(self, step):
        self._note("step_end", step)

    def window_end(self, first, last, sync):
        self._note("window_end", first, last, sync)

    def on_exit(self):
        self._note("on_exit")

    def abort(self):
        CALLS.append((self.name, "abort"))


class Second(Recorder):
    name = "second"
    fail_in = None  # never fails


def calls_of(name):
    return [c[1:] for c in CALLS if c[0] == name]
