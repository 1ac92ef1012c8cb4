"""What the job side writes about itself: rank 0's progress.json (runtime/on_demand_progress.py) and a
PyTorch trace's own metadata (runtime/trace_metadata.py), each read back whole."""

from __future__ import annotations

import json

import pytest
import torch

from bridge_plugins import ProfilingConfig
from bridge_plugins.jobdir.on_demand import read_progress
from bridge_plugins.runtime.artifacts import ArtifactWriter
from bridge_plugins.runtime.backend import BackendContext
from bridge_plugins.runtime.on_demand_progress import publish_progress
from bridge_plugins.runtime.trace_metadata import _needs_escape, add_window_metadata, window_metadata


def progress(tmp_path, samples, **cfg):
    publish_progress(tmp_path, "running", samples, ProfilingConfig(**cfg), 0.5, 4, True)
    return read_progress(tmp_path)


def test_progress_holds_the_latest_sample_and_the_rate_over_all_samples(tmp_path):
    p = progress(
        tmp_path,
        [(10, 100.0), (11, 100.5), (14, 102.0)],
        profile_step_start=3,
        profile_step_end=7,
        use_pytorch_profiler=True,
    )
    assert (p.state, p.step, p.step_time, p.steps_per_s) == ("running", 14, 102.0, 2.0)
    assert (p.poll_interval_s, p.world_size, p.window, p.can_record_memory) == (0.5, 4, (3, 7), True)


@pytest.mark.parametrize(
    "samples,step,rate",
    [
        ([], None, None),
        ([(5, 50.0)], 5, None),  # one sample: no rate
        ([(5, 50.0), (5, 51.0)], 5, None),  # no step taken between them
        ([(6, 50.0), (5, 51.0)], 5, None),  # steps going back (a restart)
        ([(5, 50.0), (5, 51.0), (9, 52.0)], 9, 2.0),  # over all samples, the first to the last
        ([(5, 50.0), (7, 50.0)], 7, 2 / 1e-9),  # the same second: no division by zero
    ],
)
def test_progress_rate_or_none(tmp_path, samples, step, rate):
    p = progress(tmp_path, samples)
    assert (p.step, p.steps_per_s, p.window) == (step, rate, None)
    assert p.step_time == (samples[-1][1] if samples else None)


def context(tmp_path, **cfg):
    config = ProfilingConfig(output_dir=str(tmp_path), profile_step_start=2, profile_step_end=5, **cfg)
    return BackendContext(config, 3, 8, tmp_path, ArtifactWriter())


@pytest.mark.parametrize("char", ['"', "\\", "\x00", "\x1f", "\x7f"])
def test_a_string_json_would_escape_needs_encoding(char):
    assert _needs_escape(f"a{char}b")


@pytest.mark.parametrize("text", ["", " ", "~", "X", "a/b:c", "\x80", "é", "ü\u2028"])
def test_a_string_json_writes_as_it_is_needs_none(text):
    assert not _needs_escape(text)


def test_window_metadata_names_the_window_the_capture_and_the_config(tmp_path):
    ctx = context(tmp_path, memory_snapshot_path='a"b\\c\n.pickle')
    meta = window_metadata(ctx, 2, 3)
    config = meta.pop("config")
    assert meta == {
        "window": [2, 4],
        "captured": [2, 3],
        "rank": 3,
        "world_size": 8,
        "percent_encoded": ["memory_snapshot_path"],
    }
    assert config["memory_snapshot_path"] == "a%22b%5Cc%0A.pickle"
    assert config["output_dir"] == str(tmp_path) and config["profile_step_end"] == 5
    safe = " !#$&'()*+,-./:;<=>?@[]^_`{|}~"
    assert (
        window_metadata(context(tmp_path, memory_snapshot_path=f'"{safe}'), 2, 3)["config"]["memory_snapshot_path"]
        == f"%22{safe}"
    )


def test_the_metadata_reaches_a_real_trace_as_json_without_a_backslash(tmp_path):
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
    prof.start()
    add_window_metadata(prof, context(tmp_path, memory_snapshot_path="x\\y é.pickle"), 2, 4)
    prof.stop()
    prof.export_chrome_trace(str(tmp_path / "trace.json"))
    trace = json.loads((tmp_path / "trace.json").read_text())
    assert trace["bridge_plugins"]["captured"] == [2, 4]
    assert trace["bridge_plugins"]["config"]["memory_snapshot_path"] == "x%5Cy %C3%A9.pickle"
