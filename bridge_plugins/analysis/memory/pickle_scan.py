"""One pass over a pickle's opcodes, before it is unpickled, that refuses what pickle.dump never writes.

The C unpickler builds everything a pickle names before the shape check can look at it: 10^7
distinct frame dicts in 150 MB take 2.1 GB to load, within the memory budget, and only then fail
the frames-per-stack limit. pickle.dump (which torch uses) collects items in batches of 1,000
(2,000 stack slots for a dict's keys and values), so a run of more than ``MAX_STACK_RUN`` items on
the unpickler's stack means the file was crafted. Why and how fast: docs/reliability.md
("Memory snapshots from anywhere").
"""

from __future__ import annotations

import mmap
import pickletools
from typing import IO

MAX_STACK_RUN = 10_000

_NEWLINE = pickletools.UP_TO_NEWLINE
_LENGTH_BYTES = {
    pickletools.TAKEN_FROM_ARGUMENT1: 1,
    pickletools.TAKEN_FROM_ARGUMENT4: 4,
    pickletools.TAKEN_FROM_ARGUMENT4U: 4,
    pickletools.TAKEN_FROM_ARGUMENT8U: 8,
}


def _tables() -> tuple[list[int], list[int], list[int], list[int]]:
    """Per opcode byte: its length with its argument when that is fixed (0 otherwise, or for a
    MARK-related opcode or STOP), its argument's length kind, what it adds to the stack above the
    innermost MARK, and whether it opens (1) or closes (-1) a MARK. An unknown byte has kind None."""
    step = [0] * 256
    kind: list[int | None] = [None] * 256
    push = [0] * 256
    mark = [0] * 256
    for op in pickletools.opcodes:
        code = ord(op.code)
        n = op.arg.n if op.arg is not None else 0
        kind[code] = n
        before = list(op.stack_before)
        if pickletools.markobject in before:  # pops everything above the mark, then the mark
            before = before[: before.index(pickletools.markobject)]  # what stays below it
            mark[code] = -1
        if pickletools.markobject in op.stack_after:
            mark[code] = 1
        else:
            push[code] = len(op.stack_after) - len(before)
        if n >= 0 and not mark[code] and op.name != "STOP":
            step[code] = 1 + n
    return step, kind, push, mark  # type: ignore[return-value]


_STEP, _KIND, _PUSH, _MARK = _tables()
_TWO_LINES = {ord("c"), ord("i")}  # GLOBAL and INST: module and name, each up to a newline


def stack_run_past(fh: IO[bytes], limit: int = MAX_STACK_RUN) -> int | None:
    """The byte offset in the (non-empty, regular) file where more than ``limit`` items first stand on
    the unpickler's stack above one MARK (or its bottom); None if that never happens.

    Stops there, at STOP, or at anything malformed (unpickling reports that). Reads the file through
    mmap: its pages are read in place, never copied.
    """
    with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return _scan(data, limit)


def _scan(data: mmap.mmap, limit: int) -> int | None:
    step_of, kind_of, push_of, mark_of = _STEP, _KIND, _PUSH, _MARK
    end = len(data)
    outer: list[int] = []  # the run below each open MARK
    run = 0
    i = 0
    while i < end:
        op = data[i]
        step = step_of[op]
        if step:  # most opcodes: a fixed-size argument, no MARK
            i += step
            run += push_of[op]
            if run > limit:
                return i
            continue
        n = kind_of[op]
        i += 1
        if n is None or op == 0x2E:  # unknown opcode, or STOP
            return None
        if n == _NEWLINE:
            for _ in range(2 if op in _TWO_LINES else 1):
                i = data.find(b"\n", i) + 1
                if i == 0:
                    return None
        elif n < 0:
            size = _LENGTH_BYTES[n]
            i += size + int.from_bytes(data[i : i + size], "little")
        mark = mark_of[op]
        if mark > 0:
            outer.append(run)
            run = 0
            continue
        if mark < 0:
            if not outer:
                return None
            run = outer.pop()
        run += push_of[op]
        if run > limit:
            return i
    return None
