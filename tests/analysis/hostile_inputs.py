"""Hostile trace files (issue 19 point 1), written on demand: the tests and benchmarks/hostile_traces.py
share them. Each case writes one file into a directory and says what ``summary`` must give: a result,
or a one-line error holding some words. Big ones are gzip, so they are small on disk.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("BRIDGE_SHARED") or REPO.parent / "shared")
JOB2 = SHARED / "fixtures" / "gpu-traces" / "job2_rank0.json.gz"
DEPTH = 200_000
OP = '{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10.0, "dur": 2.0}'
TOO_DEEP = "nested too deeply"


def _write(path: Path, pieces) -> Path:
    """Write the byte pieces, gzip-compressed (fast level) when the name ends in .gz."""
    if path.name.endswith(".gz"):
        with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1, mtime=0) as fh:
            for piece in pieces:
                fh.write(piece)
    else:
        with open(path, "wb") as fh:
            for piece in pieces:
                fh.write(piece)
    return path


def _trace(path: Path, events: str, before: str = "", after: str = "") -> Path:
    return _write(path, [f'{{{before}"traceEvents": [{events}]{after}}}'.encode()])


def _repeat(piece: bytes, total: int, block: int = 4 << 20):
    """``piece`` repeated ``total`` times, in blocks of about ``block`` bytes."""
    per = max(1, block // len(piece))
    while total > 0:
        n = min(per, total)
        yield piece * n
        total -= n


@dataclass(frozen=True)
class Case:
    name: str
    what: str  # the table's description
    build: Callable[[Path], Path]
    error: tuple[str, ...] = ()  # words of the one-line error; () means a result is expected
    big: bool = False


def _deep_args(d: Path) -> Path:
    return _trace(d / "deep_args.json", OP[:-1] + ', "args": {"x": ' + "[" * DEPTH + "]" * DEPTH + "}}")


def _deep_objects(d: Path) -> Path:
    return _trace(d / "deep_objects.json", OP[:-1] + ', "args": ' + '{"a": ' * DEPTH + "1" + "}" * DEPTH + "}")


def _deep_at(position: str) -> Callable[[Path], Path]:
    deep = "[" * DEPTH + "]" * DEPTH

    def build(d: Path) -> Path:
        p = d / f"deep_{position}.json"
        if position == "top":
            return _write(p, [deep.encode()])
        if position == "header":
            return _trace(p, OP, before=f'"distributedInfo": {deep}, ')
        if position == "event":
            return _trace(p, f"{OP}, {deep}")
        if position in ("name", "ts", "pid"):
            return _trace(p, OP.replace(f'"{position}": ', f'"{position}": {deep}, "x{position}": '))
        return _trace(p, OP, after=f', "traceName": {deep}')  # after the events: not read

    return build


def _numbers(d: Path) -> Path:
    events = [
        '{"ph": "X", "cat": "cpu_op", "name": "neg", "pid": 1, "tid": 1, "ts": -5e15, "dur": 3}',
        '{"ph": "X", "cat": "cpu_op", "name": "huge", "pid": 1, "tid": 2, "ts": 1e308, "dur": 1e308}',
        '{"ph": "X", "cat": "cpu_op", "name": "bigint", "pid": 1, "tid": 3, "ts": 1' + "0" * 40 + ', "dur": 1}',
        '{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"stream": 7, '
        '"correlation": 1' + "0" * 30 + "}}",
        '{"ph": "X", "cat": "cpu_op", "name": "negdur", "pid": 1, "tid": 4, "ts": 5, "dur": -7}',
    ]
    return _trace(d / "numbers.json", ", ".join(events))


def _nan(literal: str) -> Callable[[Path], Path]:
    def build(d: Path) -> Path:
        return _trace(d / f"ts_{literal.replace('-', 'minus_')}.json", OP.replace('"ts": 10.0', f'"ts": {literal}'))

    return build


def _long_number(d: Path) -> Path:
    return _trace(d / "long_number.json", OP.replace('"ts": 10.0', '"ts": ' + "9" * 100_000))


def _keys(d: Path) -> Path:
    events = [
        '{"ph": "i", "ph": "X", "cat": "cpu_op", "name": "dup", "name": "aten::add", "pid": 1, "tid": 1, '
        '"ts": 1, "dur": 9, "dur": 4}',
        '{"cat": "cpu_op", "name": "no_ph", "ts": 1, "dur": 1}',
        '{"ph": "X", "name": "no_cat", "ts": 1, "dur": 1}',
        '{"ph": "X", "cat": "cpu_op", "name": "no_ts", "dur": 1}',
        '{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 1, "pid": 1, "tid": 9}',
        '{"ph": "X", "cat": "cpu_op", "name": 17, "ts": 1, "dur": 1, "pid": [1], "tid": {"a": 1}, "args": [1]}',
        '{"ph": "X", "cat": "kernel", "name": "k", "ts": "1", "dur": 1, "args": {"stream": 7, "correlation": 3}}',
        "{}",
        "[]",
        "null",
        '"text"',
    ]
    return _trace(d / "keys.json", ", ".join(events))


def _boundaries(d: Path) -> Path:
    """Enough events for several chunks, whose strings and args hold what looks like event boundaries."""
    rows = []
    for i in range(60_000):
        rows.append(
            json.dumps(
                {
                    "ph": "X",
                    "cat": "cpu_op",
                    "name": f'op}},{{"ph": "X"}}]}} {i % 7}',
                    "pid": 1,
                    "tid": i % 3,
                    "ts": float(i * 10),
                    "dur": 5.0,
                    "args": {"inputs": [{"a": 1}, {"b": [2, {"c": "}, {"}]}], "note": "]}" * 20},
                }
            )
        )
    return _write(d / "boundaries.json", [('{"traceEvents": [' + ",\n".join(rows) + "]}").encode()])


def _shuffled(d: Path) -> Path:
    trace = json.loads(gzip.decompress(JOB2.read_bytes()))
    random.Random(0).shuffle(trace["traceEvents"])
    return _write(d / "shuffled.json.gz", [json.dumps(trace).encode()])


def _gzip_twice(d: Path) -> Path:
    return _write(d / "twice.json.gz", [gzip.compress(JOB2.read_bytes())])


def _huge_name(d: Path) -> Path:
    head = b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "'
    tail = b'", "ts": 1, "dur": 1}]}'
    return _write(d / "name_300mb.json.gz", [head, *_repeat(b"a", 300_000_000), tail])


def _distinct_names(d: Path) -> Path:
    def events():
        for start in range(0, 1_000_000, 50_000):
            yield "".join(
                f'{{"ph": "X", "cat": "cpu_op", "name": "op_{i}", "pid": 1, "tid": 1, "ts": {i}, "dur": 1}},\n'
                for i in range(start, start + 50_000)
            ).encode()

    return _write(d / "names_1e6.json.gz", [b'{"traceEvents": [\n', *events(), OP.encode(), b"]}"])


def _whitespace(d: Path) -> Path:
    spaces = _repeat(b" ", 2_000_000_000, 16 << 20)
    return _write(
        d / "whitespace_2gb.json.gz", [b'{"traceEvents": [' + OP.encode() + b",", *spaces, OP.encode(), b"]}"]
    )


def _tiny_events(d: Path) -> Path:
    events = _repeat(b'{"ph":"i"},', 10_000_000)
    return _write(d / "tiny_1e7.json.gz", [b'{"traceEvents": [', *events, b'{"ph":"i"}]}'])


CASES = [
    Case("deep_args", f"args nested {DEPTH:,} deep (lists)", _deep_args, (TOO_DEEP,)),
    Case("deep_objects", f"args nested {DEPTH:,} deep (objects)", _deep_objects, (TOO_DEEP,)),
    *[Case(f"deep_{pos}", f"{DEPTH:,} deep as the {pos}", _deep_at(pos), (TOO_DEEP,)) for pos in ("top", "header")],
    *[Case(f"deep_{pos}", f"{DEPTH:,} deep as the {pos}", _deep_at(pos), (TOO_DEEP,)) for pos in ("event", "name")],
    *[Case(f"deep_{pos}", f"{DEPTH:,} deep as the {pos}", _deep_at(pos), (TOO_DEEP,)) for pos in ("ts", "pid")],
    Case("deep_after", f"{DEPTH:,} deep after the events (not read)", _deep_at("after")),
    Case("numbers", "negative, 1e308, 40-digit ints, negative dur", _numbers),
    *[
        Case(f"ts_{v.replace('-', 'minus_')}", f"ts {v}", _nan(v), ("not valid JSON",))
        for v in ("NaN", "Infinity", "-Infinity")
    ],
    Case("long_number", "a 100,000-digit number", _long_number, ("not valid JSON",)),
    Case("keys", "duplicate, missing and mistyped keys", _keys),
    Case("boundaries", "}, { and ]} inside strings and args, several chunks", _boundaries),
    Case("shuffled", "job2's events in random order", _shuffled),
    Case("gzip_twice", "a gzip of a gzip", _gzip_twice, ("compressed twice",)),
    Case("name_300mb", "one event whose name is 300 MB", _huge_name, ("larger than 16 MiB",), big=True),
    Case("names_1e6", "10^6 distinct operator names", _distinct_names, big=True),
    Case("whitespace_2gb", "2 GB of whitespace between two events", _whitespace, big=True),
    Case("tiny_1e7", "10^7 tiny events", _tiny_events, big=True),
]


def uncompressed_size(path: Path) -> int:
    if not path.name.endswith(".gz"):
        return path.stat().st_size
    n, d = 0, zlib.decompressobj(31)
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            n += len(d.decompress(block))
            while d.unconsumed_tail:
                n += len(d.decompress(d.unconsumed_tail))
    return n


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    wall_s: float
    peak_rss: int  # bytes, from wait4: the process's own peak
    cpu_s: float  # user + system


# Started from a small Python process: a child's ru_maxrss counts the memory of the process it was
# forked from (before exec), so forking from a big test or benchmark process would inflate it.
_MEASURE = """
import os, subprocess, sys
p = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(p.pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss * 1024} {usage.ru_utime + usage.ru_stime}")
"""


def run_summary(path: Path, timeout: float = 600, command: tuple[str, ...] = ("summary",)) -> Run:
    """``bridge-plugins summary PATH --json`` in a fresh process, timed, with its own peak RSS."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile() as res:
        cmd = [sys.executable, "-m", "bridge_plugins", *command, str(path), "--json"]
        t0 = time.perf_counter()
        try:
            subprocess.run(
                [sys.executable, "-c", _MEASURE, res.name, *cmd],
                stdout=out,
                stderr=err,
                env=env,
                cwd=REPO,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return Run(-9, "", "timed out", time.perf_counter() - t0, 0, 0.0)
        wall = time.perf_counter() - t0
        code, rss, cpu = Path(res.name).read_text().split()
        out.seek(0)
        err.seek(0)
        text, errors = out.read().decode(errors="replace"), err.read().decode(errors="replace")
        return Run(int(code), text, errors, wall, int(rss), float(cpu))
