"""The small rules under the memory figures, each on hand-written input: a frame's parts in both
forms, which frame is the site, the final state's active blocks per device, which free ends an
allocation, the budget's size and the process's data size, and ``memory_entry``'s files and problems."""

from __future__ import annotations

import pickle
import re

import pytest

from bridge_plugins.analysis.jsonable import jsonable
from bridge_plugins.analysis.memory.budget import MIN_BUDGET, _data_bytes, budget_for
from bridge_plugins.analysis.memory.sites import NO_FRAMES, frame_parts, is_library, site_of
from bridge_plugins.analysis.memory.snapshot import memory_entry
from bridge_plugins.analysis.memory.timeline import Allocation, end_blocks, replay


@pytest.mark.parametrize(
    ("frame", "parts"),
    [
        ({}, ("", 0, "")),
        ({"name": "plain"}, ("", 0, "plain")),
        ({"line": 0, "name": "/job/model.py(31): forward"}, ("/job/model.py", 31, "forward")),
        ({"filename": "none", "line": 0, "name": "t.py(3): f"}, ("t.py", 3, "f")),
        ({"filename": "", "line": 5, "name": "t.py(3): f"}, ("", 5, "t.py(3): f")),
        ({"filename": "a.py", "line": 0, "name": "g"}, ("a.py", 0, "g")),
        ({"filename": "a.py", "line": None, "name": "g"}, ("a.py", 0, "g")),
        ({"filename": "a.py", "line": 1}, ("a.py", 1, "")),
    ],
)
def test_a_frames_parts_in_the_allocators_and_the_profilers_form(frame, parts):
    assert frame_parts(frame) == parts


@pytest.mark.parametrize(
    ("filename", "function", "library"),
    [
        ("", "f", True),
        ("<frozen importlib._bootstrap>", "f", True),
        ("/job/x.py", "<module>", True),
        ("/usr/lib/python3.11/threading.py", "run", True),
        ("/venv/lib/python3.11/site-packages/torch/nn/module.py", "_call_impl", True),
        ("torch/nn/module.py", "_call_impl", True),
        ("/job/x.py", "forward", False),
        ("/venv/lib/python3.11/site-packages/megatron/core/model.py", "forward", False),
    ],
)
def test_what_counts_as_library_code(filename, function, library):
    assert is_library(filename, function) is library


def test_the_site_is_the_innermost_user_frame_else_the_innermost_frame():
    torch = {"filename": "/v/lib/python3.11/site-packages/torch/nn/module.py", "line": 9, "name": "_call_impl"}
    user = {"filename": "/home/me/job/model.py", "line": 31, "name": "forward"}
    thread = {"filename": "/usr/lib/python3.11/threading.py", "line": 5, "name": "run"}
    assert site_of([torch, user, thread]) == "job/model.py:31 forward"
    assert site_of([torch, thread]) == "nn/module.py:9 _call_impl"  # all library: the innermost
    assert site_of([{"filename": "", "line": 0, "name": "builtin"}]) == "builtin"
    assert site_of(["not a frame", thread]) == "python3.11/threading.py:5 run"


def test_without_frames_the_category_keeps_kinds_apart():
    assert site_of(None, "parameter") == "<parameter, no Python frames>"
    assert site_of([], None) == NO_FRAMES == "<no Python frames>"
    assert site_of(["not a frame"], "") == NO_FRAMES


def _blk(state, size, requested=None, address=None, frames=None, category=None):
    b = {"state": state, "size": size}
    for key, value in (("requested_size", requested), ("address", address), ("frames", frames)):
        if value is not None:
            b[key] = value
    return b | ({"category": category} if category else {})


def test_the_final_states_active_blocks_of_one_device():
    fr = [{"filename": "/job/a.py", "line": 1, "name": "f"}]
    segments = [
        {"blocks": [_blk("active_allocated", 512, 500, 0x10, fr, "activation"), _blk("inactive", 512, None, 0x210)]},
        {"device": 0, "blocks": [_blk("active_allocated", 1024, None, 0x400)]},
        {"device": 1, "blocks": [_blk("active_allocated", 4096, 4000, 0x800)]},
    ]
    found, total = end_blocks(segments, 0)  # a segment without "device" is device 0's
    assert total == 500 + 1024
    assert found == {0x10: Allocation(0x10, 500, fr, "activation"), 0x400: Allocation(0x400, 1024, [], None)}
    assert end_blocks(segments, 1) == ({0x800: Allocation(0x800, 4000, [], None)}, 4000)
    assert end_blocks(segments, 2) == ({}, 0)


def test_blocks_without_addresses_give_no_mapping_only_their_bytes():
    segments = [{"device": 0, "blocks": [_blk("active_allocated", 64), _blk("active_allocated", 32, 30, 0x40)]}]
    assert end_blocks(segments, 0) == (None, 94)


def _ev(action, addr, size=0):
    return {"action": action, "addr": addr, "size": size}


def test_a_free_completed_counts_unless_its_own_free_requested_came_first():
    # B's free_completed follows A's free_requested: B predates the trace and is freed here
    r = replay([_ev("alloc", 0xA, 10), _ev("free_requested", 0xA, 10), _ev("free_completed", 0xB, 5)], [], 0)
    assert (r.initial_allocated, r.allocated) == (5, [15, 5, 0])
    # a request is used once: A allocated again and freed by a lone free_completed is freed
    entries = [_ev("alloc", 0xA, 10), _ev("free_requested", 0xA), _ev("free_completed", 0xA)]
    r = replay([*entries, _ev("alloc", 0xA, 7), _ev("free_completed", 0xA)], [], 0)
    assert r.allocated == [10, 0, 0, 7, 0]


def test_an_entry_without_size_or_frames_is_an_allocation_of_nothing_from_nowhere():
    r = replay([{"action": "alloc", "addr": 0xC}], [], 0)
    assert r.live_at_end == [Allocation(0xC, 0, [], None, 0)]
    r = replay([{"action": "free_completed", "addr": 0xD, "size": 3, "frames": None, "category": "temp"}], [], 0)
    assert r.initial_allocated == 3
    assert r.live_at_peak == [Allocation(0xD, 3, [], "temp", -1)]


def test_the_budget_is_sixteen_bytes_a_byte_and_never_below_the_minimum():
    assert budget_for(0) == MIN_BUDGET == 256 << 20
    assert budget_for(16 << 20) == MIN_BUDGET
    assert budget_for((16 << 20) + 1) == MIN_BUDGET + 16
    assert budget_for(100 << 20) == 1600 << 20


def _vm_data() -> int:
    with open("/proc/self/status") as f:
        return int(re.search(r"^VmData:\s+(\d+) kB$", f.read(), re.M)[1]) * 1024


def test_the_data_size_is_the_kernels_vmdata_in_bytes():
    before = _vm_data()
    measured = _data_bytes()
    assert measured in (before, _vm_data())


def test_memory_entry_keeps_figures_with_their_rank_and_a_broken_file_as_a_problem(tmp_path):
    data = {"segments": [], "device_traces": [[_ev("alloc", 0xA, 8)]]}
    ranked, plain, broken = tmp_path / "memory_snapshot_3.pickle", tmp_path / "mine.pickle", tmp_path / "x_1.pickle"
    for path in (ranked, plain):
        path.write_bytes(pickle.dumps(data, protocol=4))
    broken.write_bytes(b"not a pickle")
    entry = jsonable(memory_entry([ranked, broken, plain]))
    assert [(f["file"], f["rank"], f["devices"][0]["peak_allocated"]) for f in entry["files"]] == [
        (str(ranked), 3, 8),
        (str(plain), None, 8),
    ]
    (problem,) = entry["problems"]
    assert problem["file"] == str(broken)
    assert problem["error"].startswith("not ") and str(broken) not in problem["error"], problem


def test_a_block_alive_at_the_end_and_allocated_in_the_trace_is_not_counted_before_it():
    segments = [{"device": 0, "total_size": 64, "blocks": [_blk("active_allocated", 10, None, 0xA)]}]
    r = replay([_ev("alloc", 0xA, 10)], segments, 0)
    assert (r.initial_allocated, r.allocated, r.peak_allocated) == (0, [10], 10)


def test_without_addresses_what_the_end_holds_beyond_the_traces_allocations_predates_it():
    def replayed(final_bytes):
        segments = [{"device": 0, "total_size": 64, "blocks": [_blk("active_allocated", final_bytes)]}]
        return replay([_ev("alloc", 0xA, 10)], segments, 0)

    r = replayed(11)
    assert (r.initial_allocated, r.allocated) == (1, [11])
    assert r.live_at_end == [
        Allocation("before-trace", 1, [], "allocated before the trace"),
        Allocation(0xA, 10, [], None, 0),
    ]
    assert replayed(10).initial_allocated == 0 and replayed(10).live_at_end == [Allocation(0xA, 10, [], None, 0)]
    assert replayed(4).initial_allocated == 0


def test_an_alloc_at_a_live_address_replaces_it_and_a_free_of_nothing_frees_nothing():
    r = replay(
        [_ev("alloc", 0xA, 10), _ev("alloc", 0xA, 4), _ev("free_completed", 0xB, 5), _ev("free_completed", 0xB, 5)],
        [],
        0,
    )
    assert (r.initial_allocated, r.allocated) == (5, [15, 9, 4, 4])
    r = replay([{"action": "alloc", "addr": 0xC}], [], 0)
    assert r.allocated == [0]


def test_segments_without_a_device_are_device_0s_and_without_a_size_reserve_nothing():
    segments = [
        {"total_size": 100, "blocks": []},
        {"device": 0, "blocks": []},
        {"device": 1, "total_size": 50, "blocks": []},
    ]
    assert (replay([], segments, 0).initial_reserved, replay([], segments, 1).initial_reserved) == (100, 50)
    grown = replay([{"action": "segment_alloc", "size": 30}, {"action": "segment_map"}], segments, 0)
    assert (grown.initial_reserved, grown.reserved) == (70, [100, 100])
