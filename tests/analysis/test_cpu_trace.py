"""summary and compare on traces of our own recipe, made here with the real ProfilingController (CPU)."""

from __future__ import annotations

import pytest

from bridge_plugins.analysis.jsonable import jsonable
from bridge_plugins.analysis.pipeline import summarize
from bridge_plugins.analysis.run_compare import compare
from tests.analysis.recipe_traces import profiled_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base, new = tmp_path_factory.mktemp("base"), tmp_path_factory.mktemp("new")
    return base, profiled_run(base, 2, 6), new, profiled_run(new, 3, 5)


def test_step_times_of_a_cpu_trace(runs):
    base, wall, _, _ = runs
    s = summarize([base])
    (t,) = s.traces
    assert t.rank == 0 and t.gpu is None and t.steps.note is None
    st = t.steps
    assert st.captured == [2, 3, 4, 5] and st.count == 4
    assert 0 < st.min_us <= st.median_us <= st.max_us
    assert st.max_us < wall  # every ProfilerStep span lies inside the run
    names = [r.name for r in t.top_cpu_ops]
    assert any(n.startswith("aten::") for n in names) and len(names) == 10
    assert s.cross_rank[0].stragglers == []


def test_compare_two_windows_of_the_recipe(runs):
    base, _, new, _ = runs
    c = jsonable(compare([base], [new]))  # as compare --json prints it
    assert c["normalized"] == "per rank-step"
    assert (c["base"]["rank_steps"], c["new"]["rank_steps"]) == (4, 2)
    assert c["gpu_delta"] is None and c["step_delta_us"] is not None
    # same model, same ops: calls per step of the matmuls agree between a 4-step and a 2-step window
    calls = [
        {r.name: r.calls / t.steps.count for r in t.top_cpu_ops}
        for t in (summarize([base], top=None).traces[0], summarize([new], top=None).traces[0])
    ]
    assert calls[0]["aten::addmm"] == calls[1]["aten::addmm"] > 0
    assert c["ops_regressions"] or c["ops_improvements"]
