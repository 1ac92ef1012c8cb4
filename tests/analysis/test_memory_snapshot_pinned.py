"""Every figure of one hand-written allocator snapshot, worked out by hand (two devices, a segment
with every field missing, an OOM, a free in two steps, times to the microsecond), and what a
profiler-made one leaves unknown: snapshot_figures' whole output (as its JSON), not a few of its numbers."""

from __future__ import annotations

import pickle

import pytest

from bridge_plugins.analysis.jsonable import jsonable
from bridge_plugins.analysis.memory.loader import SnapshotFormatError
from bridge_plugins.analysis.memory.results import UNKNOWN_SEGMENTS
from bridge_plugins.analysis.memory.snapshot import (
    TIMELINE_POINTS,
    _timeline,
    sites_by_bytes,
    snapshot_figures,
    summarize_snapshot,
)
from bridge_plugins.analysis.memory.timeline import Allocation, OomEntry, replay

FA = [{"filename": "/job/model.py", "line": 31, "name": "forward"}]
FB = [{"filename": "/job/train.py", "line": 9, "name": "step"}]
S0 = {
    "device": 0,
    "address": 4096,
    "total_size": 3072,
    "stream": 7,
    "segment_type": "large",
    "blocks": [
        {"state": "active_allocated", "size": 512, "requested_size": 500, "address": 4096, "frames": FA},
        {"state": "inactive", "size": 512, "address": 4608},
        {"state": "active_allocated", "size": 1024, "address": 5120, "frames": FB},
        {"state": "active_pending_free", "size": 1024, "address": 6144},
    ],
}
S1 = {"address": 65536}  # device 0, no size, stream 0, no type, no blocks
S2 = {"device": 2, "address": 131072, "total_size": 2048, "stream": 0, "segment_type": "small", "blocks": [
    {"state": "active_allocated", "size": 2048, "requested_size": 2000, "address": 131072}
]}  # fmt: skip
DEVICE0 = [
    {"action": "alloc", "addr": 4096, "size": 500, "frames": FA, "time_us": 1_000_000.0},
    {"action": "alloc", "addr": 8192, "size": 300, "frames": [], "category": "activation", "time_us": 1_500_000.0},
    {"action": "oom", "size": 999, "device_free": 5, "time_us": 2_234_567.8},
    {"action": "free_requested", "addr": 8192, "size": 300, "time_us": 2_300_000.0},
    {"action": "free_completed", "addr": 8192, "size": 300},
    {"action": "alloc", "addr": 5120, "size": 1024, "frames": FB, "time_us": 3_000_000.0},
    {"action": "segment_alloc", "addr": 4096, "size": 3072, "time_us": 3_100_000.0},
]


def _row(device, address, total, stream, kind, allocated, requested, external, blocks, active):
    return {
        "device": device,
        "address": address,
        "stream": stream,
        "segment_type": kind,
        "total_size": total,
        "allocated": allocated,
        "requested": requested,
        "free_internal": allocated - requested,
        "free_external": external,
        "blocks": blocks,
        "active_blocks": active,
    }


def _site(site, size, categories=None):
    return {"site": site, "bytes": size, "count": 1, "categories": categories or {}}


def _write(tmp_path, segments, traces, name="s.pickle"):
    path = tmp_path / name
    path.write_bytes(pickle.dumps({"segments": segments, "device_traces": traces}, protocol=4))
    return path


def test_every_figure_of_a_hand_written_allocator_snapshot(tmp_path):
    path = _write(tmp_path, [S0, S1, S2], [DEVICE0, []])  # device 1: no events, no segment
    device0 = {
        "device": 0,
        "entries": 7,
        "peak_allocated": 1524,
        "peak_reserved": 3072,
        "peak": {"index": 5, "time_s": 2.0, "site": "job/train.py:9 step", "size": 1024},
        "end_allocated": 1524,
        "end_reserved": 3072,
        "timeline": [
            [-1, 0.0, 0, 0],
            [0, 0.0, 500, 0],
            [1, 0.5, 800, 0],
            [2, 1.234568, 800, 0],
            [3, 1.3, 500, 0],
            [4, None, 500, 0],
            [5, 2.0, 1524, 0],
            [6, 2.1, 1524, 3072],
        ],
        "sites_at_peak": [_site("job/train.py:9 step", 1024)],
        "alive_at_end": [_site("job/train.py:9 step", 1024)],
        "ooms": [{"index": 2, "size": 999, "device_free": 5, "time_s": 1.234568}],
    }
    device2 = {
        "device": 2,
        "entries": 0,
        "peak_allocated": 2000,
        "peak_reserved": 2048,
        "peak": {"index": -1, "time_s": None, "site": None, "size": None},
        "end_allocated": 2000,
        "end_reserved": 2048,
        "timeline": [[-1, None, 2000, 2048]],
        "sites_at_peak": [_site("<no Python frames>", 2000)],
        "alive_at_end": [_site("<no Python frames>", 2000)],
        "ooms": [],
    }
    segments = {
        "count": 3,
        "reserved": 5120,
        "allocated": 3584,
        "requested": 3524,
        "free_internal": 60,
        "free_external": 1536,
        "per_segment": [
            _row(0, 4096, 3072, 7, "large", 1536, 1524, 1536, 4, 2),
            _row(2, 131072, 2048, 0, "small", 2048, 2000, 0, 1, 1),
            _row(0, 65536, 0, 0, None, 0, 0, 0, 0, 0),
        ],
    }
    expected = {"file": str(path), "source": "allocator", "devices": [device0, device2], "segments": segments}
    assert jsonable(snapshot_figures(path, top_sites=1)) == expected
    assert summarize_snapshot(path, top_sites=1) == expected  # the old name: the same figures, as dicts


def test_a_profiler_made_snapshot_has_no_segments_and_no_reserved_bytes(tmp_path):
    segment = {"device": 0, "address": 0, "total_size": 100, "blocks": [{"state": "active_allocated", "size": 64}]}
    path = _write(tmp_path, [segment], [[{"action": "alloc", "addr": 1, "size": 64, "time_us": 5.0}]])
    figures = jsonable(snapshot_figures(path))
    assert (figures["source"], figures["segments"]) == ("profiler", jsonable(UNKNOWN_SEGMENTS))
    (dev,) = figures["devices"]
    assert (dev["peak_allocated"], dev["peak_reserved"], dev["end_reserved"]) == (64, None, None)
    assert dev["timeline"] == [[-1, 0.0, 0, None], [0, 0.0, 64, None]]


def test_the_timeline_keeps_each_buckets_highest_point_earliest_first():
    entries = []
    for j in range(2 * TIMELINE_POINTS + 1):  # 1201 entries: buckets of 3
        entries.append(
            {"action": "alloc", "addr": j, "size": 1} if j % 2 == 0 else {"action": "free_completed", "addr": j - 1}
        )
    points = _timeline(replay(entries, [], 0), None)
    assert len(points) == 1 + 401
    assert [p[0] for p in points[:6]] == [-1, 0, 4, 6, 10, 12]
    assert points[-1] == [1200, None, 1, 0]


def test_sites_add_up_per_site_and_category_and_a_frameless_one_is_named_by_its_category():
    allocations = [
        Allocation(1, 10, [], "activation"),
        Allocation(2, 5, [], "activation"),
        Allocation(3, 7, FA, "parameter"),
        Allocation(4, 1, FA, None),
    ]
    assert jsonable(sites_by_bytes(allocations, top=None)) == [
        {"site": "<activation, no Python frames>", "bytes": 15, "count": 2, "categories": {"activation": 15}},
        {"site": "job/model.py:31 forward", "bytes": 8, "count": 2, "categories": {"parameter": 7}},
    ]
    assert [g.site for g in sites_by_bytes(allocations, top=1)] == ["<activation, no Python frames>"]


def test_a_missing_file_is_a_format_error(tmp_path):
    with pytest.raises(SnapshotFormatError):
        snapshot_figures(tmp_path / "missing.pickle")


def test_an_oom_without_a_size_is_of_0_bytes():
    assert replay([{"action": "oom"}], [], 0).ooms == [OomEntry(index=0, size=0, device_free=None, time_us=None)]


def test_a_device_with_only_a_segment_that_names_no_device_is_device_0(tmp_path):
    figures = snapshot_figures(_write(tmp_path, [{"address": 0, "total_size": 8, "blocks": []}], []))
    assert [(d.device, d.peak_reserved) for d in figures.devices] == [(0, 8)]
