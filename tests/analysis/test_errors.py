"""One base for the readers' input errors: a bad trace and a bad snapshot are both AnalysisInputError."""

from __future__ import annotations

import pytest

from bridge_plugins.analysis.errors import AnalysisInputError
from bridge_plugins.analysis.memory.loader import SnapshotFormatError, load_snapshot
from bridge_plugins.analysis.pipeline import summarize_trace
from bridge_plugins.analysis.trace.reader import TraceError


def test_a_bad_trace_and_a_bad_snapshot_raise_the_one_base(tmp_path):
    trace = tmp_path / "rank0.pt.trace.json"
    trace.write_text('{"traceEvents": [')
    snap = tmp_path / "memory_snapshot_0.pickle"
    snap.write_bytes(b"not a pickle")
    with pytest.raises(AnalysisInputError) as bad_trace:
        summarize_trace(trace)
    with pytest.raises(AnalysisInputError) as bad_snapshot:
        load_snapshot(snap)
    assert type(bad_trace.value) is TraceError and str(bad_trace.value).startswith(str(trace))
    assert type(bad_snapshot.value) is SnapshotFormatError and str(bad_snapshot.value).startswith(str(snap))
    assert isinstance(bad_snapshot.value, ValueError)  # callers that caught ValueError still do
