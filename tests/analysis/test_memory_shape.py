"""The snapshot shape rules, in process and message by message: every value the analysis reads is
checked once, with its limit, and named by its place (bridge_plugins.analysis.memory.shape)."""

from __future__ import annotations

import pickle

import pytest

from bridge_plugins.analysis.memory.loader import SnapshotFormatError, load_snapshot
from bridge_plugins.analysis.memory.shape import MAX_FRAMES, MAX_STRING, MIN_ENTRY_BYTES
from tests.analysis.hostile_snapshots import FRAME, WRONG_TYPES

PREFIX = "not a CUDA memory snapshot we can read: "


def _load(tmp_path, data, pad: int = 0):
    path = tmp_path / "s.pickle"
    raw = pickle.dumps(data, protocol=4)
    path.write_bytes(raw + b"\0" * pad)  # bytes after STOP: a bigger file, the same pickle
    return path, load_snapshot


def _error(tmp_path, data, pad: int = 0) -> str:
    path, load = _load(tmp_path, data, pad)
    with pytest.raises(SnapshotFormatError) as e:
        load(path)
    msg = str(e.value)
    assert msg.startswith(f"{path}: ")
    return msg.removeprefix(f"{path}: ")


def _entry(**kw):
    return {"action": "alloc", "addr": 1, "size": 512, "frames": [FRAME], **kw}


def _trace(*entries):
    return {"segments": [], "device_traces": [list(entries)]}


def _segment(**kw):
    return {"segments": [{"device": 0, "total_size": 1, "blocks": [], **kw}], "device_traces": []}


def _block(**kw):
    return _segment(blocks=[{"state": "active_allocated", "size": 4, **kw}])


EXPECTED = {
    "entry is a list": "device_traces[0][0] is a list, not a dict",
    "size is a str": "device_traces[0][0].size is a str, not an int",
    "size is negative": "device_traces[0][0].size is out of range (0 .. 2^63-1 expected)",
    "size is a bool": "device_traces[0][0].size is a bool, not an int",
    "time_us is NaN": "device_traces[0][0].time_us is nan, not a finite number",
    "addr is a list": "device_traces[0][0].addr is a list, not an int",
    "frames is a dict": "device_traces[0][0].frames is a dict, not a list",
    "frame line is a str": "device_traces[0][0].frames[0].line is a str, not an int",
    "frame name is a list": "device_traces[0][0].frames[0].name is a list, not a str",
    "action is an int": "device_traces[0][0].action is an int, not a str",
    "segment is a str": "segments[0] is a str, not a dict",
    "blocks is a dict": "segments[0].blocks is a dict, not a list",
    "block without size": "segments[0].blocks[0] has no size",
    "device is -1": "segments[0].device is out of range (0 .. 2^63-1 expected)",
    "total_size is a float": "segments[0].total_size is a float, not an int",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_wrong_types_are_named_by_place(tmp_path, name):
    assert _error(tmp_path, WRONG_TYPES[name]) == PREFIX + EXPECTED[name]


@pytest.mark.parametrize(
    "data,message",
    [
        (_trace(_entry(time_us="1")), "device_traces[0][0].time_us is a str, not an int"),
        (_trace(_entry(time_us=2**63)), "device_traces[0][0].time_us is out of range (an int64 expected)"),
        (_trace(_entry(time_us=float("inf"))), "device_traces[0][0].time_us is inf, not a finite number"),
        (_trace(_entry(addr=-(2**63) - 1)), "device_traces[0][0].addr is out of range (an int64 expected)"),
        (_trace(_entry(size=2**63)), "device_traces[0][0].size is out of range (0 .. 2^63-1 expected)"),
        (_trace(_entry(device_free=-1)), "device_traces[0][0].device_free is out of range (0 .. 2^63-1 expected)"),
        (_trace(_entry(category=1)), "device_traces[0][0].category is an int, not a str"),
        (
            _trace(_entry(frames=[{**FRAME, "filename": b"x"}])),
            "device_traces[0][0].frames[0].filename is a bytes, not a str",
        ),
        (
            _trace(_entry(frames=[{**FRAME, "line": -1}])),
            "device_traces[0][0].frames[0].line is out of range (0 .. 2^63-1 expected)",
        ),
        (_trace(_entry(), _entry(frames=[FRAME, 3])), "device_traces[0][1].frames[1] is an int, not a dict"),
        (
            _trace(_entry(frames=[FRAME] * (MAX_FRAMES + 1))),
            f"device_traces[0][0].frames holds {MAX_FRAMES + 1:,} frames (the limit is {MAX_FRAMES:,})",
        ),
        (
            _trace(_entry(frames=[{**FRAME, "name": "n" * (MAX_STRING + 1)}])),
            f"device_traces[0][0].frames[0].name is {MAX_STRING + 1:,} characters long (the limit is {MAX_STRING:,})",
        ),
        (_segment(stream="0"), "segments[0].stream is a str, not an int"),
        (_segment(address=-1), "segments[0].address is out of range (0 .. 2^63-1 expected)"),
        (_segment(segment_type=3), "segments[0].segment_type is an int, not a str"),
        (_block(requested_size="4"), "segments[0].blocks[0].requested_size is a str, not an int"),
        (_block(address=1.0), "segments[0].blocks[0].address is a float, not an int"),
        (_block(state=None, size=True), "segments[0].blocks[0].size is a bool, not an int"),
        (_block(category=["a"]), "segments[0].blocks[0].category is a list, not a str"),
        (_block(frames=[[]]), "segments[0].blocks[0].frames[0] is a list, not a dict"),
        (_block(frames="f"), "segments[0].blocks[0].frames is a str, not a list"),
        ({"segments": [], "device_traces": [[], 5]}, "'device_traces' is not a list per device"),
    ],
)
def test_each_rule_and_limit(tmp_path, data, message):
    got = _error(tmp_path, data)
    assert got in (PREFIX + message, "not a CUDA memory snapshot " + message.join("()")), got


def test_values_at_the_limits_are_accepted(tmp_path):
    data = _trace(
        _entry(frames=[{**FRAME, "name": "n" * MAX_STRING}] * MAX_FRAMES, size=2**63 - 1, time_us=-5, addr=-(2**63)),
        _entry(time_us=1.5, category=None, frames=None, size=0),
    )
    data["segments"] = [{"device": 0, "total_size": 0, "blocks": [{"size": 0, "frames": [FRAME]}]}]
    path, load = _load(tmp_path, data)
    assert len(load(path)["device_traces"][0]) == 2


def test_more_entries_than_the_file_could_hold_means_one_entry_repeated(tmp_path):
    entry = _entry()
    data = {"segments": [], "device_traces": [[entry] * 2000]}  # memoized: about 2 bytes per repeat
    size = len(pickle.dumps(data, protocol=4))
    assert _error(tmp_path, data) == PREFIX + (
        f"device_traces[0] holds 2,000 entries in a file of {size:,} bytes: a snapshot torch writes takes at least "
        f"{MIN_ENTRY_BYTES} bytes per entry (the same entry repeated?)"
    )
    padded = 2000 * MIN_ENTRY_BYTES - size  # the same entries in a file big enough for them are read
    path, load = _load(tmp_path, data, pad=padded)
    assert len(load(path)["device_traces"][0]) == 2000


def test_the_budget_counts_entries_of_every_device(tmp_path):
    e = _entry()
    data = {"segments": [], "device_traces": [[e] * 1000, [e] * 1000]}
    size = len(pickle.dumps(data, protocol=4))
    padded = 1500 * MIN_ENTRY_BYTES - size  # room for 1500 entries: the second device's 1000 are too many
    assert "device_traces[1] holds 1,000 entries" in _error(tmp_path, data, pad=padded)


@pytest.mark.parametrize(
    "data,message",
    [
        (_segment(blocks=[7]), "segments[0].blocks[0] is an int, not a dict"),
        (_block(state=3), "segments[0].blocks[0].state is an int, not a str"),
        (_block(size=-4), "segments[0].blocks[0].size is out of range (0 .. 2^63-1 expected)"),
    ],
)
def test_a_block_is_checked_and_named_by_its_place(tmp_path, data, message):
    assert _error(tmp_path, data) == PREFIX + message


def test_a_segment_without_blocks_is_read_as_one_with_none(tmp_path):
    data = {"segments": [{"device": 0, "total_size": 1}], "device_traces": []}
    path, load = _load(tmp_path, data)
    assert load(path)["segments"] == [{"device": 0, "total_size": 1}]
