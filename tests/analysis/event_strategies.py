"""What the split tests feed a collector: events the fast reader can decode (hypothesis), and the
real GPU traces."""

from __future__ import annotations

from hypothesis import strategies as st

from bridge_plugins.analysis.trace.collect import Args, Event
from tests.analysis.hostile_inputs import SHARED

FIXTURES = sorted((SHARED / "fixtures" / "gpu-traces").glob("*.json.gz"))  # BRIDGE_SHARED honoured (a mutation copy)

# What the fast reader can decode as an Event (the typed path that parts come from)
IDS = st.sampled_from([1, 2, 3, "1", None, 2**63])
CATS = st.sampled_from(["cpu_op", "cpu_op", "python_function", "user_annotation", "user_annotation"])
CATS = st.one_of(CATS, st.sampled_from(["cuda_runtime", "kernel", "gpu_memcpy", "gpu_memset", "Trace", None]))
NAMES = st.sampled_from(["aten::mm", "k", "k2", "cudaLaunchKernel", "ProfilerStep#3", "ProfilerStep#4", "Event Sync"])
# no inf: the typed decoder refuses numbers past a double (such a chunk is read here, as dicts)
TIMES = st.sampled_from([0.0, 1.5, 2.0, 1e6, 3.25, -1.0, 1e308, float("nan")])
CORRS = st.sampled_from([-1, 0, 7, 8, 2**63 - 1])
STREAMS = st.sampled_from([-1, -1, 0, 7])


@st.composite
def events(draw) -> Event:
    args = Args(draw(STREAMS), draw(CORRS), draw(st.sampled_from([1.0, float("nan")])), 2.0)
    return Event(draw(CATS), draw(NAMES), draw(IDS), draw(IDS), draw(TIMES), draw(TIMES), args)
