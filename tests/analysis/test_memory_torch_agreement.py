"""Our snapshot figures against PyTorch's own tools, on the same files.

- ``torch.cuda._memory_viz.segsum`` (``python -m torch.cuda._memory_viz stats``): reserved,
  allocated and free totals of the final segments.
- ``torch.cuda._memory_viz.filter_alloc_free_pairs``: the trace's allocations never freed, our
  leak candidates.
- torch.profiler's memory timeline (``MemoryProfileTimeline``, what ``export_memory_timeline``
  plots) on a fresh CPU profile of our recipe: the rise from the end state to the peak.
"""

from __future__ import annotations

import copy
import pickle
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from torch.cuda import _memory_viz  # noqa: E402

from bridge_plugins.analysis.jsonable import jsonable  # noqa: E402
from bridge_plugins.analysis.memory.snapshot import TOP_SITES, snapshot_figures  # noqa: E402
from bridge_plugins.analysis.memory.timeline import replay  # noqa: E402


def figures_json(path, top_sites=TOP_SITES):
    """A snapshot's figures as their JSON (what ``memory --json`` prints)."""
    return jsonable(snapshot_figures(path, top_sites))


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ALL = sorted(FIXTURES.glob("memory_*.pickle"))


def test_fixtures_present():
    assert {p.name for p in ALL} >= {"memory_schema.pickle", "memory_recipe_b4.pickle", "memory_recipe_b8.pickle"}


def test_segment_totals_equal_torch_segsum():
    """On the allocator-made fixture only: segsum itself rejects profiler-made snapshots, whose
    blocks overlap (it raises 'Segment size mismatch')."""
    path = FIXTURES / "memory_schema.pickle"
    text = _memory_viz.segsum(pickle.loads(path.read_bytes()))
    torch_says = dict(re.findall(r"^(segments|total_reserved|total_allocated|total_free): (\S+)", text, re.M))
    seg = figures_json(path)["segments"]
    ours = {
        "segments": str(seg["count"]),
        "total_reserved": repr(_memory_viz.Bytes(seg["reserved"])),
        "total_allocated": repr(_memory_viz.Bytes(seg["requested"])),
        "total_free": repr(_memory_viz.Bytes(seg["free_internal"] + seg["free_external"])),
    }
    assert ours == torch_says


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_leak_candidates_equal_torch_unfreed_allocations(path):
    data = pickle.loads(path.read_bytes())
    kept = _memory_viz.filter_alloc_free_pairs(copy.deepcopy(data))["device_traces"][0]
    unfreed = sorted((e["addr"], e["size"]) for e in kept if e["action"] == "alloc")
    replayed = replay(data["device_traces"][0], data["segments"], 0)
    assert unfreed and sorted((a.addr, a.size) for a in replayed.live_at_end if a.index >= 0) == unfreed
    # the summary's leak table adds what predates the trace to exactly these
    (dev,) = figures_json(path, None)["devices"]
    before = sum(a.size for a in replayed.live_at_end if a.index < 0)
    assert sum(r["bytes"] for r in dev["alive_at_end"]) == sum(size for _, size in unfreed) + before


@pytest.mark.slow
def test_peak_rise_equals_torch_memory_profiler_timeline(tmp_path):
    """Same profile, two readers: torch's memory timeline and our reading of the snapshot torch
    makes from it. The snapshot drops tensors that predate profiling and are never touched, so we
    compare the rise from the end state to the peak, which such tensors do not change."""
    from torch.profiler import ProfilerActivity, profile
    from torch.profiler._memory_profiler import Action, TensorKey

    from recipes.config import ModelConfig
    from recipes.model import build_training, train_step

    torch.manual_seed(0)
    model, opt, data = build_training(ModelConfig(num_layers=1), seq_length=32, batch=4, device=torch.device("cpu"))
    train_step(model, opt, data)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, with_stack=True, record_shapes=True) as prof:
        for _ in range(2):
            train_step(model, opt, data)
    current = peak = 0
    for _, action, (key, _version), size in prof._memory_profile().timeline:
        if isinstance(key, TensorKey):
            current += (
                size if action in (Action.PREEXISTING, Action.CREATE) else -size if action == Action.DESTROY else 0
            )
            peak = max(peak, current)
    snap = tmp_path / "profile.pickle"
    snap.write_bytes(pickle.dumps(_memory_viz._profile_to_snapshot(prof), protocol=4))
    (dev,) = figures_json(snap)["devices"]
    assert dev["peak_allocated"] - dev["end_allocated"] == peak - current
    assert abs(dev["end_allocated"] - current) <= 0.05 * current
