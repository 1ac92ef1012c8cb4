"""What must not become a finding on its own: the window's first or last step, a CPU-only trace's
GPU; and the evidence is readable text in ms, never a dict or a word cut in two."""

from __future__ import annotations

import re

import pytest

from bridge_plugins.analysis.findings.evidence_text import evidence_lines, shorten
from bridge_plugins.analysis.pipeline import summarize
from bridge_plugins.analysis.report.findings import findings_section
from tests.analysis.gpu_traces import FIXTURES, job2_torch19
from tests.fixtures.old_format import save, with_data_loading

PUBLIC = FIXTURES.parent / "public-traces"


@pytest.mark.parametrize("step,found", [(4, False), (6, False), (5, True)])
def test_only_a_slow_step_inside_the_window_is_step_variance(step, found, tmp_path):
    """job2 (steps 4-6) with one step made 4x longer by a data loader: the first (4) or last (6) is
    warm-up or a step cut short, not a finding; the middle one (5) is."""
    path = save(with_data_loading(job2_torch19(), 0.75, only={step}), tmp_path / "rank0.json.gz")
    s = summarize([path])
    variance = [f for f in s.findings if f.kind == "step_variance"]
    assert [f.evidence["slowest_step"] for f in variance] == ([5] if found else [])
    assert [f for f in s.findings if f.kind == "input_bound"] == []  # one step of three: the median waits not


def test_a_cpu_only_trace_never_speaks_of_a_gpu():
    """A CPU-only rank whose one step is 85 % inside gloo:all_reduce: not host_bound ("runs no
    operator", as it said before issue 31), and nothing about a GPU anywhere in its findings."""
    s = summarize([next(PUBLIC.glob("cpu_only__*.json.gz"))])
    assert [f.kind for f in s.findings] == []
    (step,) = s.traces[0].per_step
    assert step.breakdown.communication_us / step.breakdown.step_us == pytest.approx(0.851, abs=0.001)


def test_evidence_is_text_in_ms_never_a_dict_or_a_cut_word():
    s = summarize([FIXTURES / "job128_rank0.json.gz", FIXTURES / "job128_rank1.json.gz"])
    lines = {f.kind: dict(evidence_lines(f.evidence)) for f in s.findings if f.ranks == [0] or f.kind == "straggler"}
    assert lines["exposed_communication"]["exposed"] == "336.98 ms"
    assert lines["straggler"]["ranks"].startswith("0 (step median: 615.12 ms, computation: 210.32 ms)")
    assert lines["memcpy"]["bytes by kind"].startswith("Memcpy DtoD: 209.2 MB")
    for text in (t for kind in lines.values() for t in kind.values()):
        assert not re.search(r"[{}]|\w+_us\b|'", text), text
    assert shorten("alpha beta gamma", 12) == "alpha beta…"
    html = findings_section(s)  # the report shows these very lines
    assert "<b>exposed</b>: 336.98 ms" in html and "{&#x27;" not in html and "_us" not in html
