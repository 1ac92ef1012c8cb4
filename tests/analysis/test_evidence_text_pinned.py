"""A finding's evidence as text, every rule of evidence_text at once on one hand-made evidence dict
(times in ms either side of 1 ms, %, shares, MB, counts, mappings in their parent's unit, nested
ones, records by name or stack, lists cut at MAX_ITEMS), and ``shorten`` at its limit."""

from __future__ import annotations

from bridge_plugins.analysis.findings.evidence_text import MAX_CHARS, evidence_lines, shorten

EVIDENCE = {
    "gpu_idle_us": 1234.5,
    "median_kernel_us": 12.0,
    "idle_pct": 12.345,
    "host_wait_share_of_idle": 0.756,
    "step_vs_median": 0.5,
    "bytes_pageable": 2_500_000,
    "calls": 1234567,
    "ratio": 2.5,
    "flag": True,
    "nothing": None,
    "by_step_us": {3: 1500.0, 4: -2000.0},
    "parts_us": {"gpu": 1000.0, "outside_ops_us": 500.0},
    "nested": {"inner": {"a_us": 1.0}, "Op::Name": 3},
    "many": {f"k{i}": i for i in range(7)},
    "top_kernels": [
        {"name": "gemm", "total_us": 3000.0, "calls": 3},
        {"stack": ["a", "b", "c", "d"], "total_us": 10.0},
        {"total_us": 5.0},
    ],
    "steps": [1, 2, 3, 4, 5, 6, 7],
    "mixed": [{"name": "x"}, 2],
    "empty": [],
}


def test_every_kind_of_evidence_as_text():
    assert evidence_lines(EVIDENCE) == [
        ("gpu idle", "1.23 ms"),
        ("median kernel", "0.012 ms"),
        ("idle", "12.3 %"),
        ("host wait share of idle", "75.6 %"),
        ("step vs median", "50.0 %"),
        ("bytes pageable", "2.5 MB"),
        ("calls", "1,234,567"),
        ("ratio", "2.50"),
        ("flag", "True"),
        ("nothing", "-"),
        ("by step", "3: 1.50 ms, 4: -2.00 ms"),
        ("parts", "gpu: 1.00 ms, outside ops: 0.500 ms"),
        ("nested", "inner (a: 0.001 ms), Op::Name: 3"),
        ("many", "k0: 0, k1: 1, k2: 2, k3: 3, k4: 4 and 2 more"),
        ("top kernels", "gemm (total 3.00 ms, calls 3); b > c > d (total 0.010 ms); total 0.005 ms"),
        ("steps", "1, 2, 3, 4, 5 and 2 more"),
        ("mixed", "name: x; 2"),
        ("empty", ""),
    ]


def test_shorten_cuts_at_the_last_word_past_half_the_limit():
    assert MAX_CHARS == 240
    exact = "x" * 240
    assert shorten(exact) == exact
    assert shorten("x" * 241) == "x" * 239 + "…"  # no space: cut inside
    words = "abc, " * 60  # 300 characters
    assert shorten(words) == "abc, " * 46 + "abc…"  # the word cut at 239 goes, and the comma
    late = "y" * 150 + " " + "z" * 200
    assert shorten(late) == "y" * 150 + "…"
    early = "y" * 10 + " " + "z" * 300  # the only space is before half the limit: cut inside
    assert shorten(early) == ("y" * 10 + " " + "z" * 228) + "…"
    assert shorten("a b c d", limit=5) == "a b…"


def test_the_edges_of_each_rule():
    five = {f"k{i}": i for i in range(5)}
    assert evidence_lines({"wait_us_by_step": {2: 1.0}, "all_five": five, "five": [1, 2, 3, 4, 5]}) == [
        ("wait by step", "2: 0.001 ms"),  # "_us_" inside a key: a time, and the label drops it
        ("all five", "k0: 0, k1: 1, k2: 2, k3: 3, k4: 4"),  # exactly MAX_ITEMS: nothing "more"
        ("five", "1, 2, 3, 4, 5"),
    ]
    assert evidence_lines({"gap_us": 999.0, "bytes_x": 1_150_001, "r": [{"total_us": 1.0, "calls": 2}]}) == [
        ("gap", "0.999 ms"),
        ("bytes x", "1.2 MB"),
        ("r", "total 0.001 ms, calls 2"),
    ]


def test_shorten_at_half_its_limit_and_the_trailing_punctuation():
    assert shorten("a" * 5 + " " + "b" * 10, limit=11) == "aaaaa bbbb…"  # the space at 5 = 11 // 2: cut inside
    assert shorten("a" * 6 + " " + "b" * 10, limit=11) == "aaaaaa…"
    assert shorten("a" * 5 + " " + "b" * 10, limit=12) == "aaaaa bbbbb…"  # at 5: past 12 // 3, not 12 // 2
    assert shorten("aaaaaaX,; b" + "c" * 10, limit=12) == "aaaaaaX…"
