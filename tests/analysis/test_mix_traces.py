"""The benchmarks' big traces (benchmarks/mix_traces.py) are copies of a real fixture that keep its
text: each copy's times are the fixture's, shifted, and written as the fixture writes them.

Why the number format matters: a copy that wrote the job128 fixture's integer ``ts`` as Python's
``1682725898236845.0`` read 0.3 s slower per 263 MB (msgspec's slow path for a number with 17
significant digits that a double holds exactly), a cost no real trace here has.
"""

from __future__ import annotations

import gzip
import json
import re

import pytest

from benchmarks.mix_traces import _period, build_many, mixes

TS = re.compile(rb'"ts": (-?[0-9][0-9.eE+-]*)')
FIXTURES = mixes()
if "job128_rank0" not in FIXTURES:
    pytest.skip(
        "the gpu-traces fixtures are missing: the repo's shared/ folder is not beside it", allow_module_level=True
    )


def _times(raw: bytes) -> list[bytes]:
    return TS.findall(raw)


@pytest.mark.parametrize("mix", ["job128_rank0", "job2_rank0"])
def test_copies_write_times_as_the_fixture_does(tmp_path, mix):
    fixture = FIXTURES[mix]
    with gzip.open(fixture) as fh:
        original = fh.read()
    target = len(original) * 2.5 / 1e6
    out = tmp_path / "rank0.json"
    build_many(fixture, {out: target})
    copied = out.read_bytes()
    first = _times(original)
    times = _times(copied)
    assert len(times) >= 2 * len(first)  # two whole copies at least, and part of a third
    integral = all(b"." not in t and b"e" not in t.lower() for t in first)
    assert integral == (mix == "job128_rank0")  # the fixtures' formats, as this test knows them
    for t in times:
        assert (b"." not in t) == integral, t
    # each copy is the fixture shifted by one period: the second copy's times, as numbers
    n = len(first)
    shift = {float(b) - float(a) for a, b in zip(first, times[n : 2 * n], strict=True)}
    assert len(shift) == 1 or (not integral and max(shift) - min(shift) < 1e-3)
    # the copy is valid JSON with every event of the fixture in each whole copy
    assert len(json.loads(copied)["traceEvents"]) >= 2 * len(json.loads(original)["traceEvents"])


def test_period_is_integral_only_for_integral_times():
    assert _period(1234.0, True) == 2234 and type(_period(1234.0, True)) is int
    assert _period(1234.4, True) == 2235  # never shorter than the span: copies never overlap
    assert _period(1234.5, False) == 2234.5 and type(_period(1234.5, False)) is float
