"""`bridge-plugins memory` figures on the schema fixture, whose allocations are known by construction
(tests/fixtures/make_memory_fixtures.py: schema_snapshot)."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from bridge_plugins.analysis.jsonable import jsonable
from bridge_plugins.analysis.memory.snapshot import TOP_SITES, snapshot_figures
from bridge_plugins.cli import main


def figures_json(path, top_sites=TOP_SITES):
    """A snapshot's figures as their JSON (what ``memory --json`` prints)."""
    return jsonable(snapshot_figures(path, top_sites))


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SCHEMA = FIXTURES / "memory_schema.pickle"
MiB = 1 << 20
PARAM, GRAD, OPTIM = 4 * MiB + 100, 4 * MiB + 100, 8 * MiB + 200
SITES = {
    "params": "megatron_job/train.py:40 build_model",
    "fwd": "megatron_job/train.py:88 forward_step",
    "bwd": "megatron_job/train.py:92 backward_step",
    "optim": "megatron_job/train.py:97 optimizer_step",
    "cache": "megatron_job/train.py:60 cache_batch",
}
# Step 2 (index 1) after its gradients: params, optimizer state, 4 activations of 4 MiB, two cached
# batches (1 MiB and 1 MiB + 1), 3 gradients.
PEAK = 3 * PARAM + 3 * OPTIM + 4 * 4 * MiB + (2 * MiB + 1) + 3 * GRAD
END = 3 * PARAM + 3 * OPTIM + 2 * MiB + 1


def _device(summary):
    (dev,) = summary["devices"]
    return dev


def test_peaks_end_and_when():
    dev = _device(figures_json(SCHEMA))
    assert (dev["peak_allocated"], dev["end_allocated"]) == (PEAK, END)
    assert (dev["peak_reserved"], dev["end_reserved"]) == (80 * MiB, 60 * MiB)  # 4 segments, then empty_cache
    assert dev["peak"]["site"] == SITES["bwd"] and dev["peak"]["size"] == GRAD
    entries = pickle.loads(SCHEMA.read_bytes())["device_traces"][0]
    assert entries[dev["peak"]["index"]]["action"] == "alloc"
    assert dev["peak"]["time_s"] == pytest.approx(
        (entries[dev["peak"]["index"]]["time_us"] - entries[0]["time_us"]) / 1e6
    )
    assert max(p[2] for p in dev["timeline"]) == PEAK and dev["timeline"][-1][2] == END
    assert dev["ooms"] == [
        {
            "index": len(entries) - 3,
            "size": 96 * MiB,
            "device_free": 3 * MiB,
            "time_s": pytest.approx((entries[-3]["time_us"] - entries[0]["time_us"]) / 1e6),
        }
    ]


def test_sites_at_peak_and_at_end():
    dev = _device(figures_json(SCHEMA))
    at_peak = {r["site"]: (r["bytes"], r["count"]) for r in dev["sites_at_peak"]}
    assert at_peak == {
        SITES["optim"]: (3 * OPTIM, 3),
        SITES["fwd"]: (16 * MiB, 4),
        SITES["params"]: (3 * PARAM, 3),
        SITES["bwd"]: (3 * GRAD, 3),
        SITES["cache"]: (2 * MiB + 1, 2),
    }
    assert [r["site"] for r in dev["sites_at_peak"]][:2] == [SITES["optim"], SITES["fwd"]]
    at_end = {r["site"]: (r["bytes"], r["count"]) for r in dev["alive_at_end"]}
    assert at_end == {SITES["optim"]: (3 * OPTIM, 3), SITES["params"]: (3 * PARAM, 3), SITES["cache"]: (2 * MiB + 1, 2)}


def test_segments():
    seg = figures_json(SCHEMA)["segments"]
    assert (seg["count"], seg["reserved"], seg["requested"]) == (3, 60 * MiB, END)
    assert seg["free_internal"] == sum(-(-s // 512) * 512 - s for s in [PARAM] * 3 + [OPTIM] * 3 + [MiB, MiB + 1])
    assert seg["reserved"] == seg["requested"] + seg["free_internal"] + seg["free_external"]
    assert [s["total_size"] for s in seg["per_segment"]] == [20 * MiB] * 3


@pytest.mark.parametrize("cut", [4, 12, 30])
def test_a_trace_that_starts_late_infers_what_was_already_there(tmp_path, cut):
    """max_entries keeps only the newest events: the figures after the cut must not change."""
    data = pickle.loads(SCHEMA.read_bytes())
    full = _device(figures_json(SCHEMA))
    data["device_traces"][0] = data["device_traces"][0][cut:]
    late = tmp_path / "late.pickle"
    late.write_bytes(pickle.dumps(data, protocol=4))
    dev = _device(figures_json(late))
    assert (dev["peak_allocated"], dev["end_allocated"], dev["end_reserved"]) == (PEAK, END, 60 * MiB)
    assert dev["peak"]["index"] == full["peak"]["index"] - cut
    assert dev["sites_at_peak"] == full["sites_at_peak"]


def test_cli_text_json_and_compare(capsys, tmp_path):
    assert main(["memory", str(SCHEMA)]) == 0
    text = capsys.readouterr().out
    assert "peak allocated   66.0 MiB" in text and SITES["bwd"] in text and "OUT OF MEMORY" in text
    assert main(["memory", str(SCHEMA), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["devices"][0]["peak_allocated"] == PEAK

    data = pickle.loads(SCHEMA.read_bytes())  # the same run without its cached batches
    entries = data["device_traces"][0]
    cached = {e["addr"] for e in entries if e["action"] == "alloc" and e["frames"][0]["line"] == 60}
    data["device_traces"][0] = [e for e in entries if e.get("addr") not in cached]
    for seg in data["segments"]:
        seg["blocks"] = [
            b if b.get("address") not in cached else {**b, "state": "inactive", "frames": []} for b in seg["blocks"]
        ]
    fixed = tmp_path / "fixed.pickle"
    fixed.write_bytes(pickle.dumps(data, protocol=4))
    assert main(["memory", str(SCHEMA), "--compare", str(fixed), "--json"]) == 0
    cmp = json.loads(capsys.readouterr().out)
    assert cmp["peak_allocated"] == {"base": PEAK, "new": PEAK - 2 * MiB - 1, "delta": -2 * MiB - 1}
    assert cmp["alive_at_end"] == [{"site": SITES["cache"], "base": 2 * MiB + 1, "new": 0, "delta": -2 * MiB - 1}]
    assert main(["memory", str(SCHEMA), "--compare", str(fixed)]) == 0
    assert "-2.0 MiB" in capsys.readouterr().out


def test_summary_prints_the_memory_figures(tmp_path, capsys):
    """`bridge-plugins summary JOB_DIR` on a job with a snapshot (and no trace) shows its figures."""
    (tmp_path / "memory_snapshot_0.pickle").write_bytes(SCHEMA.read_bytes())
    assert main(["summary", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "peak allocated 66.0 MiB" in out and "peak reserved 80.0 MiB" in out and SITES["optim"] in out
