"""What the profiler plugins share (plugins/base.py), where test_validation.py matches only a prefix:
the whole refusal line for a value of the wrong type."""

from __future__ import annotations

import pytest

from bridge_plugins import NsysPlugin


def test_a_non_bool_is_refused_naming_its_type():
    with pytest.raises(TypeError) as e:
        NsysPlugin(nsys_gpu_metrics="yes")
    assert str(e.value) == "NsysPlugin.nsys_gpu_metrics must be a bool, got 'yes' (str); pass True or False"
