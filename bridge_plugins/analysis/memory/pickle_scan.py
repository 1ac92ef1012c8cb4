"""What a pickle's opcodes can build, found before it is unpickled: the C unpickler builds everything
a pickle names before the shape check can look at it (10^7 distinct frame dicts: 150 MB, 2.1 GB).

``count_containers`` bounds the dicts and lists it can make, at C speed; ``crafted_at`` follows
every opcode for what pickle.dump, which torch uses, never writes: it fills each container right
after making it, in batches of 1,000 items, a smaller batch only last. Limits and cost:
docs/reliability.md ("Memory snapshots from anywhere").
"""

from __future__ import annotations

import mmap
import pickle
import pickletools
import sys
from dataclasses import dataclass
from typing import IO

MAX_STACK_RUN = 10_000
BATCH = 1_000  # pickle's batch size (both its C and Python picklers)

_NEWLINE = pickletools.UP_TO_NEWLINE
_LENGTH_BYTES = {
    pickletools.TAKEN_FROM_ARGUMENT1: 1,
    pickletools.TAKEN_FROM_ARGUMENT4: 4,
    pickletools.TAKEN_FROM_ARGUMENT4U: 4,
    pickletools.TAKEN_FROM_ARGUMENT8U: 8,
}


class _Op:
    """Per opcode byte, what the scan needs (from pickletools' table)."""

    def __init__(self) -> None:
        self.step = [0] * 256  # its length with a fixed-size argument, when it takes the fast path
        self.kind: list[int | None] = [None] * 256  # its argument's size or length kind; None: no such opcode
        self.push = [0] * 256  # what it adds to the stack above the innermost MARK
        self.low = [0] * 256  # how far below the top it replaces items (what it pops, less what it gives back)
        self.mark = [0] * 256  # 1: opens a MARK; -1: pops down to one
        for op in pickletools.opcodes:
            code = ord(op.code)
            n = op.arg.n if op.arg is not None else 0
            self.kind[code] = n
            before = list(op.stack_before)
            if pickletools.markobject in before:
                before = before[: before.index(pickletools.markobject)]  # what stays below the MARK
                self.mark[code] = -1
            if pickletools.markobject in op.stack_after:
                self.mark[code] = 1
                continue
            self.push[code] = len(op.stack_after) - len(before)
            self.low[code] = len(before) - (op.name in _GIVES_BACK)
            if n >= 0 and not self.mark[code] and not self.low[code] and op.name not in _SLOW:
                self.step[code] = 1 + n


_GIVES_BACK = {"APPEND", "APPENDS", "SETITEM", "SETITEMS", "ADDITEMS", "MEMOIZE", "DUP", "BUILD", "READONLY_BUFFER"}
_GETS = {ord("g"), ord("h"), ord("j")}  # push an item from the memo
_SLOW = {"STOP", "GET", "BINGET", "LONG_BINGET"}  # besides those that pop or touch a MARK
# Opcodes that fill the container below what they pop, with the stack items of a full batch
# (0: always a batch of one item).
_FILLS = {ord("a"): 0, ord("s"): 0, ord("e"): BATCH, ord("u"): 2 * BATCH, ord("\x90"): BATCH}
_TWO_LINES = {ord("c"), ord("i")}  # GLOBAL and INST: module and name, each up to a newline


@dataclass(frozen=True)
class Crafted:
    """What pickle.dump never writes, found by byte ``offset``; ``what`` says it in words."""

    offset: int
    what: str


@dataclass(frozen=True)
class Containers:
    """How many dicts and lists a pickle can make at most: its bytes that are the opcodes making
    them (EMPTY_DICT and DICT, EMPTY_LIST and LIST), counted whether opcode or data."""

    dicts: int
    lists: int

    @property
    def least_bytes(self) -> int:
        """What that many take once built, at their smallest (empty)."""
        return self.dicts * sys.getsizeof({}) + self.lists * sys.getsizeof([])


def count_containers(fh: IO[bytes], chunk: int = 1 << 20) -> Containers:
    """The (non-empty, regular) file's bytes that can make a dict or a list, counted at C speed,
    one ``chunk`` at a time into one buffer (the file's pages never count in the process's RSS)."""
    dicts = lists = 0
    buf = bytearray(chunk)
    fh.seek(0)
    while n := fh.readinto(buf):  # type: ignore[attr-defined]
        part = buf if n == chunk else buf[:n]
        dicts += part.count(pickle.EMPTY_DICT) + part.count(pickle.DICT)
        lists += part.count(pickle.EMPTY_LIST) + part.count(pickle.LIST)
    return Containers(dicts, lists)


def crafted_at(fh: IO[bytes], limit: int = MAX_STACK_RUN) -> Crafted | None:
    """The first thing in the (non-empty, regular) file that pickle.dump never writes: more than
    ``limit`` items on the unpickler's stack above one MARK (or its bottom), a container filled
    again after a batch of fewer than 1,000 items, or one filled after coming from the memo.
    None if there is none.

    Stops there, at STOP, or at anything malformed (unpickling reports that). Reads the file through
    mmap: its pages are read in place, never copied.
    """
    with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return _scan(data, limit)


def _scan(data: mmap.mmap, limit: int) -> Crafted | None:
    # the table is built per scan (0.03 ms), not at import, where mutation tests cannot reach it
    ops, fills, gets = _Op(), _FILLS, _GETS
    step_of, push_of = ops.step, ops.push
    end = len(data)
    outer: list[int] = []  # the run below each open MARK
    run = 0
    # Stack slots as (MARK depth, run): the container a small batch filled last, the last item from the memo
    small: tuple[int, int] | None = None
    got: tuple[int, int] | None = None
    i = 0
    while i < end:
        op = data[i]
        step = step_of[op]
        if step:  # most opcodes: a fixed-size argument, only pushes
            i += step
            run += push_of[op]
            if run > limit:
                return _too_many(i, limit)
            continue
        n = ops.kind[op]
        i += 1
        if n is None or op == 0x2E:  # unknown opcode, or STOP
            return None
        if n == _NEWLINE:
            for _ in range(2 if op in _TWO_LINES else 1):
                i = data.find(b"\n", i) + 1
                if i == 0:
                    return None
        elif n > 0:
            i += n
        elif n < 0:
            size = _LENGTH_BYTES[n]
            i += size + int.from_bytes(data[i : i + size], "little")
        mark = ops.mark[op]
        above = 0
        if mark > 0:
            outer.append(run)
            run = 0
        elif mark < 0:
            if not outer:
                return None
            above = run
            run = outer.pop()
        depth = len(outer)
        # Forget slots whose item is gone: its MARK level closed, or it was popped (slots never sit above
        # the current level: one is made only there, and closing a level forgets those in it)
        kept = run - ops.low[op]
        if small is not None and (small[0] > depth or (small[0] == depth and small[1] > kept)):
            small = None
        if got is not None and (got[0] > depth or (got[0] == depth and got[1] > kept)):
            got = None
        run += push_of[op]
        if run > limit:
            return _too_many(i, limit)
        if op in gets:
            got = (depth, run)
            continue
        full = fills.get(op)
        if full is not None:
            here = (depth, run)
            if here == got:
                return Crafted(i, f"a container from the memo is filled by byte {i:,}")
            if here == small:
                return Crafted(
                    i, f"a container is filled again by byte {i:,} after a batch of fewer than {BATCH:,} items"
                )
            small = here if not full or above < full else None
    return None


def _too_many(offset: int, limit: int) -> Crafted:
    return Crafted(offset, f"more than {limit:,} items pile up on the unpickler's stack by byte {offset:,}")
