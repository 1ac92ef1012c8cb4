"""A plugin left at its defaults asks the job for what ``ProfilingConfig()`` would do: the window
(steps and ranks) and every other ProfilingConfig field the plugin owns. Two places hold these
defaults (the plugin dataclasses and the config); this is what keeps them one rule."""

from __future__ import annotations

import dataclasses

import pytest

from bridge_plugins import NsysPlugin, ProfilingConfig, PyTorchProfilerPlugin

WINDOW = {"profile_step_start", "profile_step_end", "profile_ranks", "record_shapes", "output_dir"}


@pytest.mark.parametrize("plugin", [NsysPlugin, PyTorchProfilerPlugin])
def test_a_default_plugin_asks_for_the_configs_defaults(plugin):
    values = plugin().profiling_values()
    config = ProfilingConfig()
    assert values.keys() >= WINDOW
    assert values == {name: getattr(config, name) for name in values}
    assert (values["profile_step_start"], values["profile_step_end"], values["profile_ranks"]) == (10, 12, [0])


def test_the_pytorch_plugin_owns_every_pytorch_field_of_the_config():
    """Its renamed fields included (with_stack, profile_memory): none falls back to a config default
    the plugin cannot change."""
    owned = PyTorchProfilerPlugin().profiling_values().keys()
    expected = {f.name for f in dataclasses.fields(ProfilingConfig)} & (
        WINDOW
        | {"record_memory_history", "memory_snapshot_path", "memory_history_max_entries", "background_export"}
        | {"pytorch_profiler_with_stack", "pytorch_profiler_profile_memory"}
    )
    assert owned == expected
