"""summary and compare on real GPU traces (../shared/fixtures/gpu-traces, from HTA's test data), on CPU."""

from __future__ import annotations

import gzip
import importlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bridge_plugins.analysis.jsonable import dumps, jsonable
from bridge_plugins.analysis.pipeline import summarize, without_timelines
from bridge_plugins.analysis.run_compare import compare
from tests.analysis.bad_input_support import cli
from tests.analysis.gpu_traces import FIXTURES, J128

# HTA 0.5.0's get_temporal_breakdown on these traces (include_last_profiler_step=True), us
HTA_JOB128 = {0: (210320, 675191, 337336, 1222847), 1: (271973, 651136, 308077, 1231186)}


@pytest.fixture(scope="module")
def job128():
    return summarize(J128, top=5)


def test_gpu_breakdown_of_each_rank_adds_up_to_the_span_and_equals_hta(job128):
    for t in job128.traces:
        g = t.gpu
        compute, idle, non_compute, span = HTA_JOB128[t.rank]
        assert g.computation_us == compute and g.idle_us == idle and g.span_us == span
        assert g.communication_us + g.memory_us == non_compute
        assert g.computation_us + g.communication_us + g.memory_us + g.idle_us == pytest.approx(span)
        assert 0 < g.memory_us < g.communication_us <= g.communication_total_us


def test_rank_and_steps_come_from_the_trace(job128):
    assert [(t.rank, t.rank_source, t.world_size) for t in job128.traces] == [
        (0, "distributedInfo", 128),
        (1, "distributedInfo", 128),
    ]
    st = job128.traces[0].steps
    assert (st.captured, st.min_us, st.max_us, st.median_us) == ([551, 552], 607312.0, 622928.0, 615120.0)


def test_kernel_and_operator_tables(job128):
    rank0 = job128.traces[0]
    top_kernel = rank0.top_gpu_kernels[0]
    assert top_kernel.name.startswith("ncclKernel_SendRecv") and top_kernel.type == "communication"
    assert top_kernel.calls == 10 and top_kernel.total_us == pytest.approx(396199.0)
    assert len(rank0.top_gpu_kernels) == 5 and rank0.top_gpu_kernels[1].type == "computation"
    op = rank0.top_cpu_ops[0]
    assert (op.name, op.calls, op.self_us) == ("aten::_foreach_mul_", 2, 240953.0)
    assert all(r.self_us <= r.total_us for r in rank0.top_cpu_ops)
    everything = summarize([J128[0]], top=None).traces[0]
    kinds = {r.type for r in everything.top_gpu_kernels}
    assert {"computation", "communication", "memory"} <= kinds
    assert sum(r.calls for r in everything.top_gpu_kernels) == everything.gpu.gpu_events


def test_straggler_is_the_rank_with_more_computation_and_the_other_waits(job128):
    (group,) = job128.cross_rank
    assert group.steps == [551, 552]
    assert group.stragglers == [1] and group.waiting == [0]
    r1 = group.ranks[1]
    assert r1.straggler_reasons == ["computation"] and r1.computation_vs_median == pytest.approx(0.1279, abs=1e-3)


def test_traces_of_other_steps_are_compared_apart():
    s = summarize(J128 + [FIXTURES / "job2_rank0.json.gz"])
    assert [g.steps for g in s.cross_rank] == [[4, 5, 6], [551, 552]]
    assert s.cross_rank[0].stragglers == [] and len(s.cross_rank[0].ranks) == 1


def test_rank_falls_back_to_our_file_name_without_distributed_info(tmp_path):
    with gzip.open(J128[1]) as fh:
        trace = json.load(fh)
    del trace["distributedInfo"]
    path = tmp_path / "torch_profile" / "rank3_steps551-552.pt.trace.json.gz"
    path.parent.mkdir()
    with gzip.open(path, "wt") as f:
        json.dump(trace, f)
    (t,) = summarize([tmp_path]).traces
    assert (t.rank, t.rank_source) == (3, "file name")


def test_summary_cli_json_equals_summarize_and_tables_name_the_straggler():
    proc = cli("summary", *J128, "--json", "--top", "5")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == json.loads(dumps(without_timelines(summarize(J128, top=5))))
    proc = cli("summary", *J128, "--json", "--top", "5", "--timelines")
    assert json.loads(proc.stdout) == json.loads(dumps(summarize(J128, top=5)))
    proc = cli("summary", *J128, "--top", "3")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert "straggler (computation)" in proc.stdout and "waiting" in proc.stdout
    assert "Top GPU kernels by time" in proc.stdout and "ncclKernel_SendRecv" in proc.stdout


def test_compare_two_ranks_gives_step_gpu_op_and_kernel_deltas():
    c = jsonable(compare([J128[0]], [J128[1]], top=3))  # as compare --json prints it
    assert c["normalized"] == "per rank-step"
    assert c["step_delta_us"] == pytest.approx(619271.5 - 615120.0)
    assert c["gpu_delta"]["computation_us"] == pytest.approx(271973 - 210320)
    assert c["base"]["gpu"]["idle_us"] == 675191 and c["new"]["gpu"]["idle_us"] == 651136
    worst = c["kernels_regressions"][0]
    assert worst["name"].startswith("void split_embedding_backward_codegen_rowwise_adagrad_unweighted")
    assert worst["delta_us"] == pytest.approx(worst["new_us"] - worst["base_us"]) and worst["delta_us"] > 0
    assert c["ops_regressions"][0]["name"] == "aten::_foreach_mul_"
    assert c["ops_regressions"][0]["delta_us"] == pytest.approx((266855.0 - 240953.0) / 2)  # per rank-step
    assert all(r["delta_us"] < 0 for r in c["kernels_improvements"]) and len(c["ops_improvements"]) == 3


def test_compare_cli_job_directories_and_json(tmp_path):
    for name, src in (("base", J128[0]), ("new", J128[1])):
        d = tmp_path / name / "torch_profile"
        d.mkdir(parents=True)
        shutil.copy(src, d / "rank0_steps551-552.pt.trace.json.gz")
    proc = cli("compare", tmp_path / "base", tmp_path / "new", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["gpu_delta"]["computation_us"] == pytest.approx(271973 - 210320)
    proc = cli("compare", tmp_path / "base", tmp_path / "new")
    assert proc.returncode == 0 and "GPU kernels that got slower" in proc.stdout and "step time" in proc.stdout


def test_analysis_imports_neither_torch_nor_nemo_run_nor_the_runtime():
    code = (
        "import sys, bridge_plugins.analysis.pipeline, bridge_plugins.analysis.run_compare, bridge_plugins.cli.summary, "
        "bridge_plugins.analysis.job; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'nemo_run') "
        "or m.startswith('bridge_plugins.runtime')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_report_with_a_baseline_reads_each_file_once(monkeypatch):
    """`bridge-plugins report NEW --baseline BASE` used to read NEW's traces twice (once for the
    summary, again inside compare) and BASE's snapshots twice; a GPU job's traces are hundreds of
    MB, so that doubled the wait. Counted with a spy that still calls the real reader."""
    from bridge_plugins.analysis.page import build

    # the modules (``bridge_plugins.analysis.pipeline`` the attribute is the function)
    chrome_mod = importlib.import_module("bridge_plugins.analysis.chrome")  # the Chrome-trace reader
    memory_mod = importlib.import_module("bridge_plugins.analysis.memory.snapshot")

    reads = []
    real_trace, real_snapshot = chrome_mod.collect_trace, memory_mod.load_snapshot
    monkeypatch.setattr(chrome_mod, "collect_trace", lambda p, *a: reads.append(Path(p).name) or real_trace(p, *a))
    monkeypatch.setattr(memory_mod, "load_snapshot", lambda p: reads.append(Path(p).name) or real_snapshot(p))
    snapshots = Path(__file__).resolve().parents[1] / "fixtures"
    html, skipped = build(
        [J128[0], snapshots / "memory_recipe_b8.pickle"],
        baseline=[J128[1], snapshots / "memory_recipe_b4.pickle"],
        top=3,
    )
    assert sorted(reads) == sorted(
        ["job128_rank0.json.gz", "job128_rank1.json.gz", "memory_recipe_b8.pickle", "memory_recipe_b4.pickle"]
    )
    assert skipped == [] and "Compared with the baseline" in html


def test_top_n_keeps_the_n_largest_rows_of_the_full_tables():
    """The report cuts one full summary for its tables and compares the full one: the cut must be
    the N largest rows of every op and kernel, and leave everything else as it was."""
    full, cut = summarize(J128, top=None), summarize(J128, top=3)
    for f, c in zip(full.traces, cut.traces, strict=False):
        for table, key in (("top_cpu_ops", "self_us"), ("top_gpu_kernels", "total_us")):
            assert len(getattr(f, table)) > 3, "the full table holds every op and kernel"
            largest = sorted(getattr(f, table), key=lambda r: (-getattr(r, key), r.name))[:3]
            assert getattr(c, table) == largest
        assert {k: v for k, v in vars(f).items() if not k.startswith("top_") and k != "analyses"} == {
            k: v for k, v in vars(c).items() if not k.startswith("top_") and k != "analyses"
        }
        assert c.analyses == f.analyses.cut(3) and len(c.analyses.kernels.kernels) == 3
    assert full.cross_rank == cut.cross_rank


def test_a_summary_without_timelines_draws_none_and_is_the_same_as_one_that_drops_them(monkeypatch):
    """``summary`` (but with ``--json --timelines``) and ``diagnose`` ask for no step timelines: none
    is drawn (each costs a trace's analyses ~10 ms and its second core's result most of its size),
    and what is left is what dropping them after gives."""
    from bridge_plugins.analysis.analyzers import all as analyzers_all
    from bridge_plugins.analysis.pipeline import diagnose

    whole = summarize(J128, top=5)
    assert any(t.analyses.timelines for t in whole.traces)

    def never(*args):
        raise AssertionError("a step timeline drawn")

    monkeypatch.setattr(analyzers_all, "step_timelines", never)
    assert dumps(summarize(J128, top=5, timelines=False)) == dumps(without_timelines(whole))
    assert diagnose(J128).findings == whole.findings
