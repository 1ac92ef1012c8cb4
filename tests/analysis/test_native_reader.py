"""The native chunk reader (trace/_native.c) gathers exactly what msgspec and the Python loop gather,
or leaves the chunk to them.

The reference is the Python path itself (``chunked.read_chunk`` without ``on_chunk``): the same
chunk read both ways must give the same collected state, or the same error. Hypothesis writes the
chunks as JSON from events of every kind the reader meets (each phase, odd types, escapes, numbers
at the edges of int64 and of a double, nested values it skips, any whitespace), and edits real
chunks byte by byte; the 13 real traces in ``../shared/fixtures`` are read whole both ways.
"""

from __future__ import annotations

import json
import math

import msgspec
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bridge_plugins.analysis.trace import chunked, collect, native
from bridge_plugins.analysis.trace.collect import Collector, Record
from bridge_plugins.analysis.trace.split import collect_trace
from tests.analysis.collected_state import dump, state
from tests.analysis.hostile_inputs import SHARED

pytestmark = pytest.mark.skipif(native._native is None, reason="the native reader is not built (or switched off)")

TYPED = chunked.typed_decoder(Record)
ALL_FIXTURES = sorted((SHARED / "fixtures" / "gpu-traces").glob("*.json.gz")) + sorted(
    (SHARED / "fixtures" / "public-traces").glob("*.json.gz")
)


def _read(chunk: bytes, native: bool) -> tuple:
    """The state a fresh collector gathers from ``chunk`` (with the native reader, or without), or
    the error, and whether the native reader took the chunk."""
    c = Collector()
    took: list[bool] = []

    def on_chunk(data: bytes) -> bool:
        took.append(c.on_chunk(data))
        return took[-1]

    try:
        chunked.read_chunk(chunk, TYPED, 1, True, c.on_event, c.on_records, on_chunk if native else None)
    except (chunked.Unreadable, chunked.Truncated) as e:
        return ("error", type(e).__name__, str(e)), bool(took and took[0])
    return state(c), bool(took and took[0])


def _same_either_way(chunk: bytes) -> bool:
    """Asserts both readers agree; True where the native one took the chunk."""
    python, _ = _read(chunk, native=False)
    got, took = _read(chunk, native=True)
    assert got == python
    if took:  # what it takes, msgspec takes too: it never reads a chunk the Python path calls broken
        assert python[0] != "error"
    return took


# --- events as JSON: every kind the reader meets -------------------------------------------------

_ABSENT = object()
PHASES = st.sampled_from(["X"] * 8 + ["f", "s", "M", "i", "C", "b"]) | st.sampled_from(
    ["Q", "XX", "", 5, None, _ABSENT]
)
CATS = st.sampled_from(
    ["cpu_op", "cpu_op", "python_function", "user_annotation", "cuda_runtime", "cuda_driver", "kernel", "Kernel"]
    + ["gpu_memcpy", "Memcpy", "gpu_memset", "Operator", "operator", "Runtime", "Trace", "ac2g", "名前", ""]
) | st.sampled_from([None, _ABSENT, 3])
NAMES = st.sampled_from(
    ["aten::mm", "k", "cudaLaunchKernel", "ProfilerStep#3", "ProfilerStep#12", "ProfilerStep#x", "Event Sync"]
    + ["Context Sync", "", "µs kernel", "enumerate(DataLoader)#_Iter.__next__", "Optimizer.step#SGD.step"]
    + ['say "hi"', "back\\slash", "tab\there", "\U0001f600"]
) | st.sampled_from([None, _ABSENT, 7])
IDS = st.sampled_from([1, 2, 4037, 0, -1, "1", "stream 7", 2**63 - 1, -(2**63), 2**63, 2**64, None, 1.0, True, _ABSENT])
TIMES = st.sampled_from(
    [0, 1, 7, 1682725898236567, 2**53 + 1, 2**63 - 1, 2**63, -3, 0.0, -0.0, 1.5, 68.0, 0.1, 1e-7]
    + [1682725898236567.123, 6372930290389.591, 123456789012345678.5, 1e308, 5e-324, 2.5e-310, 1e22, 1e23]
    + ["5", None, _ABSENT]
)
INTS = st.sampled_from([-1, 0, 7, 123456, 2**63 - 1, 2**63, -(2**63), 7.0, "0x0", None, _ABSENT])
FLOATS = st.sampled_from([0, 1024, 1.5, 1e308, -0.0, 0.25, "1", None, _ABSENT])
NESTED = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def json_event(draw) -> object:
    """One element of traceEvents, as a Python value for json.dumps (an object nearly always)."""
    if draw(st.integers(0, 49)) == 0:
        return draw(st.sampled_from([[1, 2], "text", 5, None]))
    fields = {
        "ph": draw(PHASES),
        "cat": draw(CATS),
        "name": draw(NAMES),
        "pid": draw(IDS),
        "tid": draw(IDS),
        "ts": draw(TIMES),
        "dur": draw(TIMES),
    }
    if draw(st.integers(0, 9)):
        args = {
            "External id": draw(st.integers(0, 10**6)),
            "stream": draw(INTS),
            "correlation": draw(INTS),
            "bytes": draw(FLOATS),
            "memory bandwidth (GB/s)": draw(FLOATS),
            "Input Dims": draw(NESTED),
        }
        fields["args"] = {k: v for k, v in args.items() if v is not _ABSENT}
    elif draw(st.booleans()):
        fields["args"] = draw(st.sampled_from([None, [], 3]))
    fields.update(draw(st.dictionaries(st.sampled_from(["id", "bp", "s", "args2", "p\\u0068"]), NESTED, max_size=2)))
    items = [(k, v) for k, v in fields.items() if v is not _ABSENT]
    if draw(st.booleans()):
        items.reverse()  # the phase last: msgspec finds the tag anywhere
    return dict(items)


def as_chunk(events: list, indent: int | None, ascii_only: bool) -> bytes:
    return json.dumps(events, indent=indent, ensure_ascii=ascii_only, allow_nan=False).encode()


@settings(max_examples=700, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(json_event(), max_size=25), st.sampled_from([None, 0, 2]), st.booleans())
def test_any_chunk_gives_the_same_state_or_the_same_error_either_way(events, indent, ascii_only):
    _same_either_way(as_chunk(events, indent, ascii_only))


PLAIN = st.fixed_dictionaries(
    {
        "ph": st.sampled_from(["X", "X", "X", "f", "M"]),
        "cat": st.sampled_from(
            ["cpu_op", "kernel", "cuda_runtime", "cuda_driver", "user_annotation", "python_function", "gpu_memcpy"]
            + ["gpu_memset", "Memcpy", "Operator", "operator", "Runtime", "Trace", "ac2g", None]
        ),
        "name": st.sampled_from(
            ["aten::mm", "k", "ProfilerStep#3", "ProfilerStep#4", "Event Sync", "Context Sync", "µs"]
            + ["Optimizer.step#SGD.step", "enumerate(DataLoader)#_Iter.__next__"]
        ),
        "pid": st.sampled_from([1, 2, "dev", None]),
        "tid": st.sampled_from([5, 6, None]),
        "ts": st.integers(0, 2**53) | st.floats(0, 1e16),
        "dur": st.integers(0, 10**6) | st.floats(0, 1e6),
        "args": st.fixed_dictionaries(
            {"correlation": st.sampled_from([-1, 3, 4]), "stream": st.sampled_from([-1, 7])},
            optional={"bytes": st.integers(0, 10**9), "memory bandwidth (GB/s)": st.floats(0, 1e3), "x": NESTED},
        ),
    },
    optional={"id": st.integers(0, 5)},
)


@settings(max_examples=300, deadline=None)
@given(st.lists(PLAIN, min_size=1, max_size=40), st.sampled_from([None, 1]))
def test_plain_kineto_events_are_taken_by_the_native_reader(events, indent):
    """What today's traces hold (no escape, the types the records want), it reads itself."""
    assert _same_either_way(as_chunk(events, indent, ascii_only=False))


@pytest.mark.parametrize(
    "why, event",
    [
        ("an escape in a name", {"ph": "X", "cat": "cpu_op", "name": 'a "b"', "ts": 1, "dur": 1}),
        (
            "a stream written as a string (ROCm)",
            {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"stream": "0x0", "correlation": 1}},
        ),
        ("a time in a string", {"ph": "X", "cat": "cpu_op", "name": "a", "ts": "1", "dur": 1}),
        (
            "a correlation past int64",
            {"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1, "args": {"correlation": 2**63}},
        ),
        ("a pid past int64", {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 2**64, "ts": 1, "dur": 1}),
        (
            "a whole float for an int",
            {"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1, "args": {"stream": 7.0}},
        ),
        ("no phase", {"cat": "cpu_op", "name": "a", "ts": 1, "dur": 1}),
        ("an unknown phase", {"ph": "Q", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1}),
        ("a null name", {"ph": "X", "cat": "cpu_op", "name": None, "ts": 1, "dur": 1}),
        ("null args", {"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1, "args": None}),
    ],
)
def test_what_the_native_reader_leaves_to_the_python_path(why, event):
    chunk = as_chunk([{"ph": "X", "cat": "cpu_op", "name": "ok", "ts": 1, "dur": 1}, event], None, False)
    assert not _same_either_way(chunk), why


@pytest.mark.parametrize(
    "chunk",
    [
        b'[{"ph": "X", "ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1}]',  # a key twice
        b'[{"ph": "X", "cat": "cpu_op", "name": "a\xff", "ts": 1, "dur": 1}]',  # invalid UTF-8 in a kept string
        b'[{"ph": "X", "cat": "cpu_op", "name": "a\xed\xa0\x80", "ts": 1, "dur": 1}]',  # a surrogate in UTF-8
        b'[{"ph": "X", "cat": "cpu_op", "name": "a\xe0\x80\xaf", "ts": 1, "dur": 1}]',  # an overlong "/" (3 bytes)
        b'[{"ph": "X", "cat": "cpu_op", "name": "a\xf0\x80\x80\xaf", "ts": 1, "dur": 1}]',  # an overlong "/" (4 bytes)
        b'[{"ph": "X", "cat": "cpu_op", "name": "a\xf4\x90\x80\x80", "ts": 1, "dur": 1}]',  # past U+10FFFF
        b'[{"ph": "X", "cat": "cpu_op", "name": "a\xc3", "ts": 1, "dur": 1}]',  # a sequence cut short
        b'[{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 01, "dur": 1}]',  # not JSON: a leading zero
        b'[{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1}',  # not closed
        b'[{"ph": "X", "cat": "cpu_op", "name": "a\x01", "ts": 1, "dur": 1}]',  # a raw control character
        b'[{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1e999, "dur": 1}]',  # past a double
        b'[{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1, "x": ' + b"[" * 70 + b"]" * 70 + b"}]",
        b'[{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1}] x',  # trailing bytes
        b'[{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1, "x": tru}]',
    ],
)
def test_what_is_not_plain_json_is_left_to_msgspec(chunk):
    assert not _same_either_way(chunk)


@pytest.mark.parametrize(
    "number, value",
    [
        (b"-0", 0.0),  # msgspec reads an integer into a float field through an integer: not -0.0
        (b"-0.0", -0.0),
        (b"0.1", 0.1),
        (b"9007199254740993", 9007199254740992.0),  # 2**53 + 1: the nearest double, as a C cast rounds
        (b"1682725898236567.123", 1682725898236567.123),  # past the exact quotient: strtod
        (b"2.5e-310", 2.5e-310),  # a subnormal
        (b"1E+2", 100.0),
        (b"5567386262917.713", 5567386262917.713),  # 16 digits under 2**53: the exact quotient
        (b"90071992547409.93", 90071992547409.93),  # digits past 2**53: a double of them would round twice
        (b"1844674407370955.1615", 1844674407370955.1615),  # 20 digits: past a uint64's sure range
        (b"1844674407370955162.1", 1844674407370955162.1),  # 20 digits past 2**64: a uint64 of them wraps to 5
        (
            b"0." + b"0" * 22 + b"1",
            1e-23,
        ),  # 10**23 is no double: past the exact quotient (1/1e23 is 1.0000000000000001e-23)
    ],
)
def test_numbers_read_as_msgspec_reads_them(number, value):
    chunk = b'[{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": ' + number + b', "dur": 1}]'
    assert msgspec.json.decode(b"[" + number + b"]", type=list[float])[0] == value  # the reference, first
    assert _same_either_way(chunk)
    c = Collector()
    assert c.on_chunk(chunk)
    (ts,), _, _ = c.data.ops[1, 1]
    assert ts == value and math.copysign(1, ts) == math.copysign(1, value)


# --- real chunks, edited byte by byte ------------------------------------------------------------


def _real_chunk() -> bytes:
    """The first ~64 KB of job2_rank0's events (cpu ops, launches, kernels, memcpys, flows) as a chunk."""
    import gzip

    raw = gzip.decompress((SHARED / "fixtures" / "gpu-traces" / "job2_rank0.json.gz").read_bytes())
    events = msgspec.json.decode(
        msgspec.json.decode(raw, type=dict[str, msgspec.Raw])["traceEvents"], type=list[msgspec.Raw]
    )
    out, size = [], 0
    for e in events:
        out.append(bytes(e))
        size += len(e)
        if size > 64_000:
            break
    return b"[" + b",\n".join(out) + b"]"


REAL = _real_chunk()


def test_a_real_chunk_is_taken_whole():
    assert _same_either_way(REAL)


@settings(max_examples=400, deadline=None)
@example([(10, 1, b"")])  # the opening of the first event gone
@example([(len(REAL) // 2, 0, b'"')])  # a quote inserted mid-chunk: the cut falls inside a string
@given(
    st.lists(
        st.tuples(
            st.integers(0, len(REAL) - 1),
            st.integers(0, 3),
            st.sampled_from([b"", b'"', b"\\", b"{", b"}", b",", b"]", b"0", b"\x00", b"\xc3", b"e"]),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_a_real_chunk_edited_gives_the_same_state_or_the_same_error_either_way(edits):
    data = bytearray(REAL)
    for at, cut, put in edits:
        data[at : at + cut] = put
    _same_either_way(bytes(data))


# --- the collector's caps, which the native reader reaches through its methods ----------------------


@pytest.mark.parametrize("cap", ["MAX_NAMES", "MAX_THREADS", "MAX_STEPS"])
def test_past_each_cap_the_native_reader_gathers_what_the_python_loop_does(cap, monkeypatch):
    monkeypatch.setattr(collect, cap, 3)
    chunks = [REAL[: len(REAL)], REAL]
    python, in_c = Collector(), Collector()
    for chunk in chunks:
        chunked.read_chunk(chunk, TYPED, 1, True, python.on_event, python.on_records)
        assert in_c.on_chunk(chunk)
    assert state(in_c) == state(python)


# --- whole traces ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: p.name[:40])
def test_every_real_trace_collects_the_same_either_way(path, monkeypatch):
    with_native = dump(collect_trace(path, 1))
    monkeypatch.setattr(native, "_native", None)
    assert dump(collect_trace(path, 1)) == with_native


@pytest.mark.parametrize("names", range(500, 516))
def test_an_old_format_annotation_where_the_string_cache_grows(names):
    """The reader's per-chunk string cache grows at 512 entries; an old-format ``Operator`` named
    like a torch span is read as an annotation at that moment too (its entries must still hold:
    under AddressSanitizer, a stale one is a use after free)."""
    events = [
        {"ph": "X", "cat": "cpu_op", "name": f"op{k}", "pid": 1, "tid": 1, "ts": k, "dur": 1} for k in range(names)
    ]
    events.append({"ph": "X", "cat": "Operator", "name": "ProfilerStep#7", "pid": 1, "tid": 1, "ts": 1000, "dur": 5})
    events.append({"ph": "X", "cat": "Operator", "name": "ProfilerStep#8", "pid": 1, "tid": 2, "ts": 2000, "dur": 5})
    assert _same_either_way(as_chunk(events, None, False))
