"""The pickle scan's batch rules at their boundaries, per filling opcode, on pickles crafted opcode by
opcode: pickle.dump fills a container in batches of 1,000 items, a smaller batch only last, so a
batch just under a full one followed by another is refused, and a full batch followed by a remainder
(of any size below a full one) is not. The scan is a security check: a wrong batch size lets a
container filled twice in small batches through (what pickle.dump never writes)."""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

import pytest

from bridge_plugins.analysis.memory.pickle_scan import BATCH, crafted_at

EMPTY_SET = b"\x8f"  # protocol 4
ADDITEMS = b"\x90"


@dataclass(frozen=True)
class Filler:
    """A container's opening opcode, the batch opcode that fills it, one entry's stack items, and
    the opcode pickle.dump writes for a container of one entry (None: a batch of one)."""

    empty: bytes
    batch: bytes
    entry: bytes
    single: bytes | None

    def fill(self, entries: int) -> bytes:
        return pickle.MARK + self.entry * entries + self.batch

    def fill_one(self) -> bytes:
        return self.entry + self.single if self.single is not None else self.fill(1)


FILLERS = {
    "APPENDS": Filler(pickle.EMPTY_LIST, pickle.APPENDS, pickle.NONE, pickle.APPEND),
    "SETITEMS": Filler(pickle.EMPTY_DICT, pickle.SETITEMS, pickle.NONE + pickle.NONE, pickle.SETITEM),
    "ADDITEMS": Filler(EMPTY_SET, ADDITEMS, pickle.NONE, None),
}


def _scan(path: Path, fills: list[bytes], filler: Filler) -> int | None:
    """The offset of the refusal in a protocol 4 pickle of one container filled by ``fills``."""
    path.write_bytes(pickle.PROTO + b"\x04" + filler.empty + b"".join(fills) + pickle.STOP)
    with open(path, "rb") as fh:
        found = crafted_at(fh)
    return None if found is None else found.offset


def _end_of(fills: list[bytes]) -> int:
    """The offset just past the last of ``fills`` (the refusal's offset: the byte the scan stopped at)."""
    return 3 + sum(len(f) for f in fills)


@pytest.mark.parametrize("name", FILLERS)
def test_a_batch_just_under_a_full_one_followed_by_another_is_refused(tmp_path, name):
    f = FILLERS[name]
    for second in (f.fill(1), f.fill(BATCH), f.fill_one()):
        fills = [f.fill(BATCH - 1), second]
        assert _scan(tmp_path / "p", fills, f) == _end_of(fills), (name, len(second))


@pytest.mark.parametrize("name", FILLERS)
def test_a_full_batch_followed_by_a_remainder_passes(tmp_path, name):
    f = FILLERS[name]
    for rest in ([f.fill(1)], [f.fill(BATCH - 1)], [f.fill_one()], [f.fill(BATCH), f.fill(BATCH), f.fill(7)]):
        assert _scan(tmp_path / "p", [f.fill(BATCH), *rest], f) is None, (name, len(rest))


@pytest.mark.parametrize("name", FILLERS)
def test_a_remainder_followed_by_anything_is_refused(tmp_path, name):
    """A small batch is last: after it even a full batch is a second fill."""
    f = FILLERS[name]
    fills = [f.fill(BATCH), f.fill(1), f.fill(BATCH)]
    assert _scan(tmp_path / "p", fills, f) == _end_of(fills)


@pytest.mark.parametrize("name", ["APPENDS", "SETITEMS"])
def test_a_single_item_fill_is_always_a_small_batch(tmp_path, name):
    """APPEND and SETITEM fill one entry: what pickle.dump writes for a container of one, or a
    batch of one left last; anything after them is a second fill."""
    f = FILLERS[name]
    for second in (f.fill_one(), f.fill(BATCH)):
        fills = [f.fill_one(), second]
        assert _scan(tmp_path / "p", fills, f) == _end_of(fills), (name, len(second))
    assert _scan(tmp_path / "p", [f.fill_one()], f) is None


@pytest.mark.parametrize("items", [1, BATCH - 1, BATCH, BATCH + 1])
@pytest.mark.parametrize("name", FILLERS)
def test_what_pickle_dump_writes_at_the_boundaries_passes(tmp_path, name, items):
    """The real pickler's bytes for 1, 999, 1,000 and 1,001 entries: the crafted cases above are
    what it never writes, not what it does."""
    value = {"APPENDS": list(range(items)), "SETITEMS": dict.fromkeys(range(items)), "ADDITEMS": set(range(items))}
    path = tmp_path / "p"
    path.write_bytes(pickle.dumps([value[name], value[name].copy()], protocol=4))
    with open(path, "rb") as fh:
        assert crafted_at(fh) is None
