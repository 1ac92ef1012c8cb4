"""The replay rules of memory_timeline on small hand-written snapshots (torch's documented schema)."""

from __future__ import annotations

import pickle

from bridge_plugins.analysis.jsonable import jsonable
from bridge_plugins.analysis.memory.snapshot import snapshot_figures

FR = [{"filename": "/job/train.py", "line": 7, "name": "step"}]


def _ev(action, addr, size, t=None, device_free=None):
    e = {"action": action, "addr": addr, "size": size, "stream": 0, "frames": FR}
    if t is not None:
        e["time_us"] = t
    if device_free is not None:
        e["device_free"] = device_free
    return e


def _summary(tmp_path, segments, traces):
    p = tmp_path / "s.pickle"
    p.write_bytes(pickle.dumps({"segments": segments, "device_traces": traces}, protocol=4))
    return jsonable(snapshot_figures(p))


def _seg(device, address, total, blocks):
    return {
        "device": device,
        "address": address,
        "total_size": total,
        "stream": 0,
        "segment_type": "large",
        "blocks": blocks,
    }


def test_free_requested_ends_an_allocation_and_free_completed_does_not_count_twice(tmp_path):
    s = _summary(
        tmp_path,
        [_seg(0, 0, 1000, [{"address": 0, "size": 1000, "state": "inactive"}])],
        [[_ev("alloc", 0, 600, 10), _ev("free_requested", 0, 600, 20), _ev("free_completed", 0, 600, 30)]],
    )
    (dev,) = s["devices"]
    assert [p[2] for p in dev["timeline"]] == [0, 600, 0, 0]
    assert dev["peak_allocated"] == 600 and dev["peak"]["time_s"] == 0.0 and dev["end_allocated"] == 0


def test_a_lone_free_completed_frees_what_predated_the_trace(tmp_path):
    """The ring buffer dropped the alloc and the free_requested: the block existed from the start."""
    s = _summary(
        tmp_path,
        [_seg(0, 0, 1000, [{"address": 0, "size": 1000, "state": "inactive"}])],
        [[_ev("free_completed", 0, 400), _ev("alloc", 0, 100)]],
    )
    (dev,) = s["devices"]
    assert [p[2] for p in dev["timeline"]] == [400, 0, 100]
    assert dev["peak_allocated"] == 400 and dev["peak"]["index"] == -1 and dev["peak"]["time_s"] is None


def test_expandable_segments_map_and_unmap_count_as_reserved(tmp_path):
    s = _summary(
        tmp_path,
        [_seg(0, 0, 2048, [{"address": 0, "size": 2048, "state": "inactive"}])],
        [[_ev("segment_map", 0, 4096), _ev("segment_unmap", 2048, 2048), _ev("oom", 0, 1 << 30, device_free=5)]],
    )
    (dev,) = s["devices"]
    assert [p[3] for p in dev["timeline"]] == [0, 4096, 2048, 2048]
    assert dev["peak_reserved"] == 4096 and dev["ooms"][0]["size"] == 1 << 30 and dev["ooms"][0]["device_free"] == 5


def test_each_device_on_its_own_and_the_largest_is_main(tmp_path):
    from bridge_plugins.analysis.memory.snapshot import main_device

    segments = [
        _seg(
            0, 0, 512, [{"address": 0, "size": 512, "requested_size": 500, "state": "active_allocated", "frames": FR}]
        ),
        _seg(1, 1 << 20, 4096, [{"address": 1 << 20, "size": 4096, "state": "inactive"}]),
    ]
    s = _summary(tmp_path, segments, [[], [_ev("alloc", 1 << 20, 3000), _ev("free_requested", 1 << 20, 3000)]])
    assert [(d["device"], d["peak_allocated"], d["end_allocated"]) for d in s["devices"]] == [
        (0, 500, 500),
        (1, 3000, 0),
    ]
    assert main_device(snapshot_figures(tmp_path / "s.pickle")).device == 1
    assert s["devices"][0]["alive_at_end"] == [
        {"site": "job/train.py:7 step", "bytes": 500, "count": 1, "categories": {}}
    ]
