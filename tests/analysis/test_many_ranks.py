"""1,000 ranks in one view: the report's rank x step heatmaps and stragglers table, its size, and a
terminal summary that fits a screen. The traces are small synthetic Kineto traces (one GPU kernel,
one NCCL kernel and a CPU operator per step), with two stragglers planted; reading 1,000 real
ones is the benchmark's job (benchmarks/analysis_many_ranks.py)."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from bridge_plugins.analysis import ranks_view
from bridge_plugins.analysis.parallel import Workers
from bridge_plugins.analysis.pipeline import summarize
from bridge_plugins.analysis.report.html import render
from bridge_plugins.analysis.text.summary import to_text

RANKS = 1000
STEPS = (10, 11, 12, 13)
SLOW = {417: 12, 998: 10}  # rank -> the step it is slow in (3x the step time)
IDLE = {23: 11}  # rank -> the step in which its GPU idles most (a short kernel)


def _trace(rank: int) -> dict:
    events, corr, ts = [], 1, 1_000_000.0
    for step in STEPS:
        slow = 3.0 if SLOW.get(rank) == step else 1.0
        dur = 10_000.0 * slow
        events.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{step}",
                "ts": ts,
                "dur": dur,
                "pid": 1,
                "tid": 1,
            }
        )
        events.append(
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": ts + 10, "dur": 100.0 * slow, "pid": 1, "tid": 1}
        )
        for k, (name, length) in enumerate((("sm90_gemm", 6_000.0 * slow), ("ncclDevKernel_AllReduce", 2_000.0))):
            if IDLE.get(rank) == step and k == 0:
                length = 600.0
            launch = ts + 200 + k
            events.append(
                {
                    "ph": "X",
                    "cat": "cuda_runtime",
                    "name": "cudaLaunchKernel",
                    "ts": launch,
                    "dur": 5,
                    "pid": 1,
                    "tid": 1,
                    "args": {"correlation": corr},
                }
            )
            start = ts + 500 + k * 6_000.0 * slow
            events.append(
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": name,
                    "ts": start,
                    "dur": length,
                    "pid": 0,
                    "tid": 7,
                    "args": {"stream": 7, "correlation": corr, "device": 0},
                }
            )
            corr += 1
        ts += dur
    return {"distributedInfo": {"rank": rank, "world_size": RANKS}, "traceEvents": events}


@pytest.fixture(scope="module")
def summary(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("ranks") / "torch_profile"
    out.mkdir()
    for r in range(RANKS):
        with gzip.open(out / f"rank{r}_steps10-13.pt.trace.json.gz", "wt", compresslevel=1) as f:
            json.dump(_trace(r), f)
    return summarize([out.parent], workers=Workers(jobs=2))


def test_the_stragglers_are_found(summary):
    assert len(summary.traces) == RANKS and ranks_view.is_many(summary)
    assert [r.rank for r in ranks_view.stragglers(summary)] == [417, 998]


def test_report_is_heatmaps_not_a_row_per_rank(summary, tmp_path):
    html = render(summary)
    size = len(html.encode())
    assert size < 3_000_000, f"{size} bytes"
    # the step-time heatmap: one row per rank, one column per step, the slow cells darkest
    step_map = re.search(r'<figure class="chart heatmap" id="chart-step-heatmap"(.*?)</figure>', html, re.S)
    assert step_map, "no step-time heatmap"
    assert 'data-rows="1000" data-columns="4"' in step_map.group(0)
    cells = re.findall(
        r'<rect x="(\d+)" y="(\d+)" width="1" height="1" class="(h\d|hn)"(?: data-v="([^"]+)")?/>', step_map.group(1)
    )
    assert len(cells) == RANKS * len(STEPS)
    by_cell = {(int(y), int(x)): (cls, float(v)) for x, y, cls, v in cells}
    assert by_cell[(417, STEPS.index(12))] == ("h8", 30_000.0)
    assert by_cell[(998, STEPS.index(10))] == ("h8", 30_000.0)
    assert by_cell[(0, 0)] == ("h0", 10_000.0)
    assert sum(cls == "h8" for cls, _ in by_cell.values()) == 2
    # the idle-share heatmap: rank 23's step 11 idles most
    idle_map = re.search(r'<figure class="chart heatmap" id="chart-idle-heatmap"(.*?)</figure>', html, re.S).group(1)
    idle = {
        (int(y), int(x)): float(v)
        for x, y, _, v in re.findall(
            r'<rect x="(\d+)" y="(\d+)" width="1" height="1" class="(h\d)" data-v="([^"]+)"/>', idle_map
        )
    }
    worst = max(idle, key=idle.get)
    assert worst == (23, STEPS.index(11))
    assert idle[worst] == pytest.approx(1 - (600 + 2000) / (6000 + 2000), abs=1e-5)  # 8 ms window, 2.6 ms busy
    assert idle[(0, 0)] == pytest.approx(0.0, abs=1e-9)
    # the stragglers table holds the stragglers, not 1,000 rows; details only for them
    table = re.search(r'<table id="table-stragglers".*?</table>', html, re.S).group(0)
    assert re.findall(r"<td>rank (\d+)</td>", table) == ["417", "998"]
    assert html.count('<details class="rank"') == 2


def test_terminal_summary_fits_a_screen(summary):
    text = to_text(summary)
    lines = text.rstrip("\n").splitlines()
    assert len(lines) < 60, text
    assert "1000 ranks, 1000 traces, steps 10-13" in text
    assert re.search(r"Stragglers: 2 of 1000 ranks", text)
    spread = next(line for line in lines if line.lstrip("│ ").startswith("GPU idle share"))
    cells = [c.strip() for c in spread.split("│")[1:-1]]
    # over each whole trace: 38 ms of GPU span, 32 ms busy (6 ms between steps); rank 23 loses 5.4 ms more
    assert (cells[1], cells[-2], cells[-1]) == ("15.8 %", "30.0 %", "23")
