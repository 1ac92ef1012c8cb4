"""Property: for random windows, rank selections and loop shapes (start, stop, stride: resumed,
ended early, skipping steps), the real controller with the real torch.profiler captures exactly
what a plain reference model says, in a file named after the first and last captured step.

Public behaviour only (which steps each rank captures, which files exist), so that it holds
whatever the controller's internals look like."""

from __future__ import annotations

import tempfile
from pathlib import Path

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge_plugins import ProfilingConfig, ProfilingController
from tests.support import trace_files, trace_steps


def reference_capture(loop: range, start: int, end: int, ranks: list[int], rank: int) -> set[int]:
    """The steps ``rank`` captures: the loop's steps inside [start, end) if the rank is selected."""
    if ranks and rank not in ranks:
        return set()
    return {step for step in loop if start <= step < end}


@st.composite
def cases(draw):
    start = draw(st.integers(0, 10))
    end = draw(st.integers(start + 1, start + 5))
    first = draw(st.integers(0, 12))
    loop = range(first, draw(st.integers(first + 1, first + 12)), draw(st.integers(1, 3)))
    ranks = draw(st.lists(st.integers(0, 3), unique=True, max_size=3))
    rank = draw(st.integers(0, 3))
    return loop, start, end, ranks, rank


@settings(max_examples=40, deadline=None)
@given(case=cases())
def test_each_rank_captures_what_the_reference_model_says(case):
    loop, start, end, ranks, rank = case
    expected = reference_capture(loop, start, end, ranks, rank)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = ProfilingConfig(
            use_pytorch_profiler=True,
            profile_step_start=start,
            profile_step_end=end,
            profile_ranks=ranks,
            output_dir=tmp,
        )
        x = torch.ones(4)
        with ProfilingController(cfg, rank=rank, world_size=4) as ctl:
            for step in loop:
                with ctl.step(step):
                    x = x + 1
        files = trace_files(Path(tmp))
        if not expected:
            assert files == {}, case
            return
        (path,) = files[rank]
        assert path.name == f"rank{rank}_steps{min(expected)}-{max(expected)}.pt.trace.json.gz", case
        assert trace_steps(path) == expected, case
        assert set(ctl.captured_steps) >= expected, case
