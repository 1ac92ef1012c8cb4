"""Our analyzers answer on every trace and say what they could not compute and why, including
traces where HTA raises (recorded here when HTA is installed)."""

from __future__ import annotations

import gzip
import json

import pytest

from bridge_plugins.analysis.jsonable import dumps
from bridge_plugins.analysis.pipeline import summarize
from tests.analysis.gpu_traces import J128

try:
    from tests.analysis.hta_reference import Raised, reference
except ImportError:  # HTA is test-only; without it only our side is checked
    reference = None


def _variant(tmp_path, name, keep):
    with gzip.open(J128[0]) as fh:
        trace = json.load(fh)
    trace["traceEvents"] = [e for e in trace["traceEvents"] if keep(e)]
    d = tmp_path / name
    d.mkdir()
    (d / "rank0_steps551-552.pt.trace.json.gz").write_bytes(gzip.compress(json.dumps(trace).encode()))
    return d


def _answers(d) -> dict:
    s = summarize([d], top=None)
    (t,) = s.traces
    json.loads(dumps(s))  # and the JSON is valid
    return t


def test_no_launch_calls_hta_raises_ours_says_why(tmp_path):
    d = _variant(tmp_path, "no_runtime", lambda e: e.get("cat") != "cuda_runtime")
    t = _answers(d)
    a = t.analyses
    assert a.overlap is None and "none launched by a CPU call" in a.note and "0 CPU launch calls" in a.note
    assert [s.step for s in a.steps] == [551, 552] and a.timelines  # the CPU side is still analysed
    if reference is not None:
        hta = reference(str(d))
        assert isinstance(hta[("idle", 0)], Raised) and "No objects to concatenate" in hta[("idle", 0)].error


def test_no_launch_calls_and_no_steps(tmp_path):
    d = _variant(
        tmp_path, "bare", lambda e: e.get("cat") != "cuda_runtime" and "ProfilerStep" not in str(e.get("name"))
    )
    a = _answers(d).analyses
    assert a.note is None and a.overlap.overlap_pct == pytest.approx(14.946, abs=0.01)  # every GPU event kept
    assert a.launches.launches == 0 and "no GPU event matched a CPU launch call" in a.launches.note
    assert a.queue.streams == [] and "no queue to measure" in a.queue.note
    assert "no CPU launch calls matched" in a.idle.note and a.idle.streams
    assert a.attribution.note and a.steps == [] and a.timelines == []
    assert a.syncs.count == 0  # reads that issued no CUDA call did not wait on the device


def test_no_communication(tmp_path):
    d = _variant(tmp_path, "no_nccl", lambda e: not str(e.get("name", "")).startswith("nccl"))
    a = _answers(d).analyses
    assert a.overlap.overlap_pct is None and "no communication kernels" in a.overlap.note
    assert all("communication" not in r.type for r in a.kernels.by_type)


def test_no_memcpy(tmp_path):
    d = _variant(tmp_path, "no_copies", lambda e: e.get("cat") not in ("gpu_memcpy", "gpu_memset"))
    a = _answers(d).analyses
    assert a.bandwidth.kinds == [] and a.bandwidth.note == "no memcpy or memset on the GPU"


def test_cpu_only(tmp_path):
    d = _variant(tmp_path, "cpu", lambda e: "stream" not in (e.get("args") or {}))
    t = _answers(d)
    assert t.gpu is None and t.analyses.note == "no GPU events in this trace (CPU-only run)"


def test_hostile_names_and_values_reach_no_markup(tmp_path):
    """Kernel and op names with markup, a 1e300 us kernel, a negative one, a string stream and a
    10**400-byte copy: diagnose and report finish, quietly, and the page has no script or link out."""
    import subprocess
    import sys

    with gzip.open(J128[0]) as fh:
        trace = json.load(fh)
    evil = '</title></text><script>alert(1)</script><a href="http://x">'
    for e in trace["traceEvents"][:3000]:
        if e.get("cat") in ("kernel", "cpu_op"):
            e["name"] = evil + e["name"]
    corr = next(e["args"]["correlation"] for e in trace["traceEvents"] if e.get("cat") == "kernel")
    extra = [
        ("hugek", 1e300, 7, {}),
        ("negk", -5, 7, {}),
        ("Memcpy HtoD (Pageable -> Device)", 0, "x", {"bytes": 10**400}),
    ]
    for name, dur, stream, args in extra:
        trace["traceEvents"].append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": name,
                "ts": 1682725898083829,
                "dur": dur,
                "args": {"stream": stream, "correlation": corr, **args},
            }
        )
    path = tmp_path / "rank0_steps551-552.pt.trace.json"
    path.write_text(json.dumps(trace))
    for args in (["diagnose", "--json"], ["report", "-o", str(tmp_path / "r.html")]):
        proc = subprocess.run(
            [sys.executable, "-m", "bridge_plugins", *args, str(path)], capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0 and "Warning" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    html = (tmp_path / "r.html").read_text()
    assert "<script" not in html and 'href="http://x"' not in html and "&lt;script&gt;" in html
