"""Hostile CUDA memory snapshots, written opcode by opcode (fast, and shapes ``pickle.dumps`` would
need deep recursion for): deep nesting, 10^7 frames, huge strings, wrong types, aliasing.

Each generator writes one file and returns nothing; ``CASES`` maps a case name to it. Used by
tests/analysis/test_hostile_snapshots.py and benchmarks/hostile_snapshots.py.
"""

from __future__ import annotations

import pickle
import struct
from collections.abc import Callable
from pathlib import Path

FRAME = {"filename": "/job/train.py", "line": 7, "name": "step"}


class Ops:
    """A pickle (protocol 2) written as opcodes; ``value`` pickles a plain value with ``pickle.dumps``."""

    def __init__(self) -> None:
        self.parts = [pickle.PROTO + b"\x02"]

    def raw(self, b: bytes) -> Ops:
        self.parts.append(b)
        return self

    def value(self, v) -> Ops:
        return self.raw(pickle.dumps(v, protocol=2)[2:-1])  # without PROTO and STOP

    def str(self, s: str) -> Ops:
        b = s.encode()
        return self.raw(pickle.BINUNICODE + struct.pack("<I", len(b)) + b)

    def put(self, slot: int) -> Ops:
        return self.raw(pickle.LONG_BINPUT + struct.pack("<I", slot))

    def get(self, slot: int, times: int = 1) -> Ops:
        return self.raw((pickle.LONG_BINGET + struct.pack("<I", slot)) * times)

    def write(self, path: Path) -> None:
        path.write_bytes(b"".join(self.parts) + pickle.STOP)


def _snapshot_with_entry(path: Path, write_frames: Callable[[Ops], None], extra: dict | None = None) -> None:
    """{"segments": [], "device_traces": [[{alloc entry, frames=<written by write_frames>}]]}, each dict
    filled by one SETITEMS as pickle.dump writes it (a dict filled twice is refused before its content)."""
    o = Ops().raw(pickle.EMPTY_DICT + pickle.MARK).str("segments").raw(pickle.EMPTY_LIST)
    o.str("device_traces").raw(pickle.MARK + pickle.MARK + pickle.EMPTY_DICT + pickle.MARK)
    for k, v in {"action": "alloc", "addr": 1, "size": 512, "stream": 0, **(extra or {})}.items():
        o.str(k).value(v)
    o.str("frames")
    write_frames(o)
    o.raw(pickle.SETITEMS + pickle.LIST + pickle.LIST + pickle.SETITEMS).write(path)


def nested_frames(path: Path, depth: int = 100_000) -> None:
    """An entry whose frames list is a list nested ``depth`` deep."""
    _snapshot_with_entry(path, lambda o: o.raw(pickle.EMPTY_LIST * depth + pickle.APPEND * (depth - 1)))


def nested_in_unused_key(path: Path, depth: int = 100_000) -> None:
    """A list nested ``depth`` deep under a key the analysis never reads."""
    _snapshot_with_entry(path, lambda o: o.value([FRAME]), extra={"x": None})  # placeholder, replaced below
    deep = pickle.EMPTY_LIST * depth + pickle.APPEND * (depth - 1)
    data = path.read_bytes()
    marker = pickle.dumps(None, protocol=2)[2:-1]  # NONE
    at = data.index(b"X\x01\x00\x00\x00x") + 6
    assert data[at : at + 1] == marker
    path.write_bytes(data[:at] + deep + data[at + 1 :])


def nested_top(path: Path, depth: int = 100_000) -> None:
    """The whole pickle is a list nested ``depth`` deep (no snapshot at all)."""
    Ops().raw(pickle.EMPTY_LIST * depth + pickle.APPEND * (depth - 1)).write(path)


def frames_1e7_aliased(path: Path, n: int = 10**7) -> None:
    """One entry with ``n`` frames, all the same memoized frame dict (20 MB file)."""

    def frames(o: Ops) -> None:
        o.raw(pickle.EMPTY_LIST + pickle.MARK).value(FRAME).put(1).get(1, n - 1).raw(pickle.APPENDS)

    _snapshot_with_entry(path, frames)


def frames_1e7_distinct(path: Path, n: int = 10**7) -> None:
    """One entry with ``n`` distinct frame dicts (a 150 MB file that takes 2.1 GB to load)."""

    def frames(o: Ops) -> None:
        o.raw(pickle.EMPTY_LIST + pickle.MARK)
        o.str("filename").put(1).str("/job/train.py").put(2).str("line").put(3).str("name").put(4).str("f").put(5)
        one = (
            pickle.EMPTY_DICT
            + pickle.MARK
            + (pickle.BINGET + b"\x01" + pickle.BINGET + b"\x02")
            + (pickle.BINGET + b"\x03" + pickle.BININT1 + b"\x07")
            + (pickle.BINGET + b"\x04" + pickle.BINGET + b"\x05")
            + pickle.SETITEMS
        )
        o.raw(one * n).raw(pickle.APPENDS)

    _snapshot_with_entry(path, frames)


def dicts_1e7_appended(path: Path, n: int = 10**7) -> None:
    """One entry whose frames list gets ``n`` distinct dicts one APPEND at a time: the stack stays
    short (a 20 MB file that took 345 MB before the budget stopped it)."""
    _snapshot_with_entry(path, lambda o: o.raw(pickle.EMPTY_LIST + (pickle.EMPTY_DICT + pickle.APPEND) * n))


def dicts_1e7_appended_from_memo(path: Path, n: int = 10**7) -> None:
    """The same, fetching the list from the memo for each dict and popping it after (a 50 MB file)."""
    one = pickle.BINGET + b"\x01" + pickle.EMPTY_DICT + pickle.APPEND + pickle.POP
    _snapshot_with_entry(path, lambda o: o.raw(pickle.EMPTY_LIST).put(1).raw(one * n))


def empty_dicts_1e7_batched(path: Path, n: int = 10**7) -> None:
    """One entry whose frames list gets ``n`` empty dicts in batches of 1,000, as pickle.dump writes
    them: a byte per dict (a 10 MB file that builds 720 MB)."""
    batch = pickle.MARK + pickle.EMPTY_DICT * 1000 + pickle.APPENDS
    _snapshot_with_entry(path, lambda o: o.raw(pickle.EMPTY_LIST + batch * (n // 1000)))


def entries_1e7_aliased(path: Path, n: int = 10**7) -> None:
    """10^7 trace entries, all the same memoized alloc entry (a 50 MB file)."""
    o = Ops().raw(pickle.EMPTY_DICT).str("segments").raw(pickle.EMPTY_LIST + pickle.SETITEM)
    o.str("device_traces").raw(pickle.MARK + pickle.EMPTY_LIST + pickle.MARK)
    o.value({"action": "alloc", "addr": 1, "size": 512, "frames": [FRAME]}).put(1).get(1, n - 1)
    o.raw(pickle.APPENDS + pickle.LIST + pickle.SETITEM).write(path)


def huge_string(path: Path, size: int = 100 << 20) -> None:
    """A frame whose function name is ``size`` bytes long."""
    _snapshot_with_entry(
        path,
        lambda o: (
            o.raw(pickle.MARK + pickle.EMPTY_DICT + pickle.MARK)
            .str("filename")
            .str("/a.py")
            .str("name")
            .str("n" * size)
            .raw(pickle.SETITEMS + pickle.LIST)
        ),
    )


def huge_int(path: Path) -> None:
    """An allocation of 10^100000 bytes."""
    _snapshot_with_entry(path, lambda o: o.value([FRAME]), extra={"size": 10**100000})


def _plain(data) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(pickle.dumps(data, protocol=4))


def _entry(**kw) -> dict:
    return {"action": "alloc", "addr": 1, "size": 512, "frames": [FRAME], **kw}


def _self_containing(path: Path) -> None:
    frames: list = []
    frames.append(frames)
    path.write_bytes(pickle.dumps({"segments": [], "device_traces": [[_entry(frames=frames)]]}, protocol=4))


WRONG_TYPES: dict[str, object] = {
    "entry is a list": {"segments": [], "device_traces": [[[1, 2]]]},
    "size is a str": {"segments": [], "device_traces": [[_entry(size="512")]]},
    "size is negative": {"segments": [], "device_traces": [[_entry(size=-1)]]},
    "size is a bool": {"segments": [], "device_traces": [[_entry(size=True)]]},
    "time_us is NaN": {"segments": [], "device_traces": [[_entry(time_us=float("nan"))]]},
    "addr is a list": {"segments": [], "device_traces": [[_entry(addr=[1])]]},
    "frames is a dict": {"segments": [], "device_traces": [[_entry(frames=FRAME)]]},
    "frame line is a str": {"segments": [], "device_traces": [[_entry(frames=[{**FRAME, "line": "7"}])]]},
    "frame name is a list": {"segments": [], "device_traces": [[_entry(frames=[{**FRAME, "name": ["x"]}])]]},
    "action is an int": {"segments": [], "device_traces": [[_entry(action=3)]]},
    "segment is a str": {"segments": ["seg"], "device_traces": []},
    "blocks is a dict": {"segments": [{"device": 0, "total_size": 1, "blocks": {}}], "device_traces": []},
    "block without size": {
        "segments": [{"device": 0, "total_size": 1, "blocks": [{"state": "active_allocated"}]}],
        "device_traces": [],
    },
    "device is -1": {"segments": [{"device": -1, "total_size": 1, "blocks": []}], "device_traces": []},
    "device is 10^18": {"segments": [{"device": 10**18, "total_size": 1, "blocks": []}], "device_traces": []},
    "total_size is a float": {"segments": [{"device": 0, "total_size": 1.5, "blocks": []}], "device_traces": []},
    "device_traces holds a dict": {"segments": [], "device_traces": [{}]},
}

CASES: dict[str, Callable[[Path], None]] = {
    "pickle nested 10^5 deep (whole file)": nested_top,
    "frames nested 10^5 deep": nested_frames,
    "10^5-deep list under an unread key": nested_in_unused_key,
    "10^7 frames (one memoized dict)": frames_1e7_aliased,
    "10^7 distinct frames": frames_1e7_distinct,
    "10^7 dicts appended one by one": dicts_1e7_appended,
    "10^7 dicts appended to a list from the memo": dicts_1e7_appended_from_memo,
    "10^7 empty dicts in batches of 1,000": empty_dicts_1e7_batched,
    "10^7 entries (one memoized dict)": entries_1e7_aliased,
    "100 MB function name": huge_string,
    "size 10^100000": huge_int,
    "frames list contains itself": _self_containing,
    **{name: _plain(data) for name, data in WRONG_TYPES.items()},
}


_MEASURE = r"""
import json, os, subprocess, sys, time
t0 = time.perf_counter()
p = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
err = p.stderr.read()
_, status, usage = os.wait4(p.pid, 0)
print(json.dumps({"rc": os.waitstatus_to_exitcode(status), "seconds": time.perf_counter() - t0,
                  "cpu_s": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024,
                  "stderr": err.decode(errors="replace")}))
"""


def run_measured(argv: list[str], cwd: Path, env: dict, timeout: float) -> dict:
    """Run ``argv``; its exit code, seconds (wall and CPU), peak RSS (MB) and stderr.

    Through a small Python in between: an exec'd child inherits its parent's peak RSS in
    ``ru_maxrss`` (the kernel keeps the old memory map's high-water mark), so measured from a
    big parent (pytest) every child would look at least that big.
    """
    import json
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, "--", *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    return json.loads(out.stdout)
