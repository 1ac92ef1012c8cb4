"""The opcode scan before unpickling: it follows every opcode of every protocol to the byte, finds a
run of more than the limit above one MARK and a container filled again after a small batch, and
passes what pickle.dump writes."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from bridge_plugins.analysis.memory import loader
from bridge_plugins.analysis.memory.loader import SnapshotFormatError, load_snapshot
from bridge_plugins.analysis.memory.pickle_scan import (
    MAX_STACK_RUN,
    Containers,
    Crafted,
    count_containers,
    crafted_at,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

EVERY_KIND = {
    "text": "a\nb é",
    "long text": "é" * 300,  # BINUNICODE, past SHORT_BINUNICODE's 255 bytes
    "big text": "x" * 70_000,  # spans protocol 4's 64 KB frames
    "bytes": [b"y", b"x" * 300],
    "ints": [0, 255, 65_535, 2**31 - 1, -1, 2**70, 2**2100],  # up to LONG4 (263 bytes)
    "floats": [1.5, -0.0],
    "tuples": [(), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4)],
    "sets": [{1, 2}, frozenset({3})],
    "bytearray": bytearray(b"z" * 10),
    "singletons": [None, True, False],
}
EVERY_KIND["shared"] = [EVERY_KIND["tuples"], EVERY_KIND["tuples"]]  # memo gets


# Protocol 0 fills a list one APPEND per item (the loader refuses it before the scan): one of each text opcode.
_SHARED = (1, 2, 3, 4)
TEXT_KINDS = ("a\nb é", 2**70, 7, 1.5, {1}, b"xy", {"k": [1]}, _SHARED, _SHARED)

SINGLES = {  # containers of one item (filled by APPEND or SETITEM), and batches that end in one
    "lists of one": [[i] for i in range(3000)],
    "dicts of one": [{"k": i} for i in range(3000)],
    "in tuples": [([i], {i: i}, {i}, i) for i in range(3000)],
    "by key": {i: [i] for i in range(3000)},
    "1001 items": [list(range(1001)), set(range(1001)), {i: i for i in range(1001)}],
}


def _scan(path: Path, content: bytes, limit: int = MAX_STACK_RUN) -> int | None:
    path.write_bytes(content)
    with open(path, "rb") as fh:
        found = crafted_at(fh, limit)
    return None if found is None else found.offset


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_every_opcode_is_followed_to_the_byte(tmp_path, protocol):
    """A run placed after a pickle of every kind of value is found at its exact byte: a misread
    argument length anywhere before it would lose the run or move it."""
    value = TEXT_KINDS if protocol == 0 else EVERY_KIND
    body = pickle.dumps(value, protocol=protocol)[:-1]  # without STOP
    content = body + pickle.MARK + pickle.NONE * (MAX_STACK_RUN + 1) + pickle.LIST + pickle.STOP
    assert _scan(tmp_path / "p", content) == len(body) + 1 + MAX_STACK_RUN + 1
    assert _scan(tmp_path / "p", pickle.dumps(value, protocol=protocol)) is None


@pytest.mark.parametrize("protocol", range(1, pickle.HIGHEST_PROTOCOL + 1))
@pytest.mark.parametrize("name", SINGLES)
def test_containers_of_one_item_pass(tmp_path, protocol, name):
    assert _scan(tmp_path / "p", pickle.dumps(SINGLES[name], protocol=protocol)) is None


@pytest.mark.parametrize(
    "fill, at",
    [
        (pickle.EMPTY_DICT + pickle.APPEND, 2),  # the list stays on the stack: found at its second item
        (pickle.BINGET + b"\x01" + pickle.EMPTY_DICT + pickle.APPEND + pickle.POP, 1),  # from the memo: at the first
        (pickle.BINGET + b"\x01" + pickle.MARK + pickle.EMPTY_DICT + pickle.APPENDS + pickle.POP, 1),
    ],
)
def test_a_list_filled_one_item_at_a_time_is_found(tmp_path, fill, at):
    head = pickle.PROTO + b"\x02" + pickle.EMPTY_LIST + pickle.BINPUT + b"\x01"
    end_of_fill = len(fill) - (len(pickle.POP) if fill.endswith(pickle.POP) else 0)
    assert _scan(tmp_path / "p", head + fill * 3 + pickle.STOP) == len(head) + (at - 1) * len(fill) + end_of_fill


def test_each_finding_says_what_and_by_which_byte(tmp_path):
    """The whole finding, the words the refusal shows included, for each of the three kinds."""
    path = tmp_path / "p"

    def found(content: bytes, limit: int = MAX_STACK_RUN) -> Crafted | None:
        path.write_bytes(content)
        with open(path, "rb") as fh:
            return crafted_at(fh, limit)

    run = pickle.PROTO + b"\x04" + pickle.EMPTY_LIST + pickle.MARK
    piled = run + pickle.EMPTY_DICT * 1001 + pickle.APPENDS + pickle.STOP
    assert found(piled, limit=1000) == Crafted(
        1005, "more than 1,000 items pile up on the unpickler's stack by byte 1,005"
    )
    head = pickle.PROTO + b"\x02" + pickle.EMPTY_LIST + pickle.BINPUT + b"\x01"
    from_memo = head + (pickle.BINGET + b"\x01" + pickle.EMPTY_DICT + pickle.APPEND + pickle.POP) * 3 + pickle.STOP
    assert found(from_memo) == Crafted(9, "a container from the memo is filled by byte 9")
    refilled = (
        pickle.EMPTY_LIST + pickle.MARK + pickle.NONE * 999 + pickle.APPENDS + pickle.NONE + pickle.APPEND + pickle.STOP
    )
    assert found(refilled) == Crafted(
        1004, "a container is filled again by byte 1,004 after a batch of fewer than 1,000 items"
    )


def test_a_full_batch_may_be_followed_by_another(tmp_path):
    """1,000 items, then one: what pickle.dump writes for a list of 1,001; 999 then one is crafted."""
    for first, expect in ((1000, None), (999, 2 + 999 + 3)):
        content = pickle.EMPTY_LIST + pickle.MARK + pickle.NONE * first + pickle.APPENDS + pickle.NONE + pickle.APPEND
        assert _scan(tmp_path / "p", content + pickle.STOP) == expect


def test_the_limit_is_inclusive(tmp_path):
    run = pickle.PROTO + b"\x04" + pickle.EMPTY_LIST + pickle.MARK
    for items, expect in ((5, None), (6, len(run) + 6)):
        content = run + pickle.EMPTY_DICT * items + pickle.APPENDS + pickle.STOP
        assert _scan(tmp_path / "p", content, limit=5) == expect


def test_a_run_without_a_mark_counts_from_the_bottom(tmp_path):
    """Items left on the stack below any MARK cost as much: ``}}}...`` then STOP returns the last."""
    content = pickle.PROTO + b"\x04" + pickle.EMPTY_DICT * 6 + pickle.STOP
    assert _scan(tmp_path / "p", content, limit=5) == 8


def test_closing_a_mark_returns_to_the_run_below_it(tmp_path):
    """MARK + 3 items + LIST leaves one list: the outer run goes 4, then 5 with the list, then 6."""
    inner = pickle.MARK + pickle.NONE * 3 + pickle.LIST
    content = pickle.NONE * 4 + inner + pickle.NONE + pickle.STOP
    assert _scan(tmp_path / "p", content, limit=5) == len(content) - 1
    assert _scan(tmp_path / "p", content, limit=6) is None


def test_what_follows_stop_is_not_read(tmp_path):
    content = pickle.dumps([], protocol=4) + pickle.MARK + pickle.NONE * 10
    assert _scan(tmp_path / "p", content, limit=5) is None


@pytest.mark.parametrize(
    "content",
    [
        b"\x80\x04\xff" + pickle.NONE * 10,  # no such opcode
        b"\x80\x04" + pickle.BINUNICODE + b"\xff\xff\xff\x7f",  # a string past the end
        b"\x80\x04" + pickle.LIST + pickle.NONE * 10,  # closes a MARK never opened
        b"\x80\x02" + pickle.INT + b"12",  # a line without its newline
    ],
)
def test_a_malformed_pickle_is_left_to_the_unpickler(tmp_path, content):
    assert _scan(tmp_path / "p", content, limit=5) is None


def test_pickle_dump_batches_a_dict_in_runs_of_2000(tmp_path):
    """1,000 keys and 1,000 values above each MARK: what MAX_STACK_RUN leaves a margin over."""
    content = pickle.dumps(
        {"segments": [], "device_traces": [[{"i": i} for i in range(5000)]], "d": {i: i for i in range(5000)}},
        protocol=4,
    )
    assert _scan(tmp_path / "p", content, limit=2000) is None
    assert _scan(tmp_path / "p", content, limit=1999) is not None


@pytest.mark.parametrize("name", ["memory_recipe_b4.pickle", "memory_recipe_b8.pickle", "memory_schema.pickle"])
def test_the_snapshots_torch_wrote_pass(name):
    with open(FIXTURES / name, "rb") as fh:
        assert crafted_at(fh, 2000) is None


def test_the_refusal_says_what_was_counted_and_the_limit(tmp_path, monkeypatch):
    """10^6 distinct dicts in one list: loading grows by 64 bytes per byte read, so the scan runs and
    refuses the file (past a floor of 0 here instead of 64 MB, to keep the file small)."""
    monkeypatch.setattr(loader, "WATCH_FLOOR", 0)
    path = tmp_path / "snap.pickle"
    head = pickle.PROTO + b"\x02" + pickle.EMPTY_LIST + pickle.MARK
    path.write_bytes(head + pickle.EMPTY_DICT * 10**6 + pickle.APPENDS + pickle.STOP)
    with pytest.raises(SnapshotFormatError) as e:
        load_snapshot(path)
    assert str(e.value) == (
        f"{path}: not a CUDA memory snapshot: more than 10,000 items pile up on the unpickler's stack by byte "
        "10,005 (pickle.dump, which torch uses, fills containers in batches of 1,000, a smaller one only last)"
    )


def test_the_scan_runs_only_when_loading_grows_fast(tmp_path, monkeypatch):
    """The recipe's snapshot grows by less than 10 bytes per byte read: not scanned, even past a floor
    of 0; 10^6 empty dicts in batches of 1,000 (as pickle.dump writes them) grow by 64: scanned, and pass."""
    monkeypatch.setattr(loader, "WATCH_FLOOR", 0)
    scanned: list[int] = []
    real = loader.crafted_at

    def counted(fh, *args):
        scanned.append(os.fstat(fh.fileno()).st_size)
        return real(fh, *args)

    monkeypatch.setattr(loader, "crafted_at", counted)
    load_snapshot(FIXTURES / "memory_recipe_b4.pickle")
    assert scanned == []
    path = tmp_path / "batched.pickle"
    batch = pickle.MARK + pickle.EMPTY_DICT * 1000 + pickle.APPENDS
    path.write_bytes(pickle.PROTO + b"\x04" + pickle.EMPTY_LIST + batch * 1000 + pickle.STOP)
    assert len(load_snapshot(path)["segments"]) == 10**6
    assert scanned == [path.stat().st_size]


def test_container_bytes_are_counted_whether_opcode_or_data(tmp_path):
    """Two dicts, one list, and a string holding one of each opcode byte: 3 dicts, 2 lists at most."""
    path = tmp_path / "p"
    path.write_bytes(pickle.dumps([{}, {}, "}]dl"], protocol=4))
    with open(path, "rb") as fh:
        assert count_containers(fh, chunk=3) == Containers(dicts=4, lists=3)


def test_a_file_whose_containers_exceed_the_budget_is_refused_before_unpickling(tmp_path):
    """4,195,000 empty dicts take at least 256.04 MB: over the 256 MB budget of a 4 MB file."""
    path = tmp_path / "snap.pickle"
    batch = pickle.MARK + pickle.EMPTY_DICT * 1000 + pickle.APPENDS
    path.write_bytes(pickle.PROTO + b"\x04" + pickle.EMPTY_LIST + batch * 4195 + pickle.STOP)
    with pytest.raises(SnapshotFormatError) as e:
        load_snapshot(path)
    assert str(e.value) == (
        f"{path}: refused: its bytes can make up to 4,195,000 dicts and 1 lists, which take at least 256 MB once "
        "built, over its memory budget of 256 MB (16x its size, at least 256 MB)"
    )
    path.write_bytes(pickle.PROTO + b"\x04" + pickle.EMPTY_LIST + batch * 4194 + pickle.STOP)  # 255.98 MB
    with open(path, "rb") as fh:
        assert loader._check_containers(fh, path, path.stat().st_size) is None


@pytest.mark.parametrize("name", ["memory_recipe_b4.pickle", "memory_recipe_b8.pickle", "memory_schema.pickle"])
def test_the_snapshots_torch_wrote_stay_far_below_their_budget(name):
    """Counted, under 4x the file's size (2.8x, 2.8x, 3.3x) where the budget allows 16x."""
    with open(FIXTURES / name, "rb") as fh:
        assert count_containers(fh).least_bytes < 4 * (FIXTURES / name).stat().st_size


def test_a_file_that_ends_without_stop_is_left_to_the_unpickler(tmp_path):
    """The scan stops at the file's last byte: nothing is read past it."""
    assert _scan(tmp_path / "p", pickle.PROTO + b"\x04" + pickle.NONE * 3) is None


def test_a_run_of_memo_fetches_is_refused_like_any_other(tmp_path):
    """GET is read on the slow path: six fetches of one list above the bottom pile up past a limit of 5."""
    head = pickle.PROTO + b"\x02" + pickle.EMPTY_LIST + pickle.BINPUT + b"\x01"
    content = head + (pickle.BINGET + b"\x01") * 6 + pickle.STOP
    assert _found(tmp_path / "p", content, 5) == Crafted(
        len(head) + 5 * 2, f"more than 5 items pile up on the unpickler's stack by byte {len(head) + 10}"
    )


# A list made inside two MARK levels (a tuple being built inside a batch), so that its slot's level (2)
# and its place in its level's run (1 or 2) differ, and a level opened above it (3).
_TWO_LEVELS = pickle.PROTO + b"\x04" + pickle.EMPTY_LIST + pickle.MARK + pickle.NONE + pickle.MARK + pickle.NONE


@pytest.mark.parametrize(
    "made, name",
    [
        (pickle.EMPTY_LIST + pickle.NONE + pickle.APPEND, "a small batch"),
        (pickle.EMPTY_LIST + pickle.BINPUT + b"\x01" + pickle.POP + pickle.BINGET + b"\x01", "the memo"),
    ],
)
def test_a_slot_below_an_open_mark_is_remembered(tmp_path, made, name):
    """A list filled by a small batch (or fetched from the memo) is filled again through a batch
    opened above it: found when that batch closes, however the slot's level and place compare."""
    content = _TWO_LEVELS + made + pickle.MARK + pickle.NONE + pickle.APPENDS
    found = _found(tmp_path / "p", content + pickle.STOP)
    assert found is not None and found.offset == len(content), name
    assert ("from the memo" in found.what) == (name == "the memo")


@pytest.mark.parametrize(
    "made",
    [
        pickle.EMPTY_LIST + pickle.NONE + pickle.APPEND,  # filled by a small batch
        pickle.EMPTY_LIST + pickle.BINPUT + b"\x01" + pickle.POP + pickle.BINGET + b"\x01",  # from the memo
    ],
)
@pytest.mark.parametrize("level", [0, 2])
def test_a_slot_popped_and_replaced_is_forgotten(tmp_path, made, level):
    """POP, then a new list in the same place filled once, as pickle.dump writes it: not the old one."""
    head = pickle.PROTO + b"\x04" + pickle.EMPTY_LIST if level == 0 else _TWO_LEVELS
    content = head + made + pickle.POP + pickle.EMPTY_LIST + pickle.NONE + pickle.APPEND + pickle.STOP
    assert _found(tmp_path / "p", content) is None


def test_closing_a_level_forgets_its_slots(tmp_path):
    """Two tuples in a row, each holding a list filled once, built two levels up: the second list
    sits where the first did (level 3, place 2), and is not taken for it."""
    pair = pickle.MARK + pickle.NONE + pickle.EMPTY_LIST + pickle.NONE + pickle.APPEND + pickle.TUPLE
    assert _found(tmp_path / "p", _TWO_LEVELS + pair + pair + pickle.STOP) is None


def _found(path: Path, content: bytes, limit: int = MAX_STACK_RUN) -> Crafted | None:
    path.write_bytes(content)
    with open(path, "rb") as fh:
        return crafted_at(fh, limit)
