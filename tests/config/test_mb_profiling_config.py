"""Megatron Bridge's ProfilingConfig tests, ported (tests/unit_tests/training/test_config.py, main).

Names and parameter tables are Megatron Bridge's; ``create_test_profiling_config`` is its helper.
Deliberate difference, better for the user: Megatron Bridge validates with ``assert`` in
``finalize()``, which runs inside the job (minutes or hours after submission) and vanishes under
``python -O``; we validate when the config is constructed, in the user's script, and raise
ValueError with the field, the value and the fix. So where MB expects ``AssertionError`` from
``finalize()``/``container.validate()``, these tests expect ValueError from construction, and
match our message (MB's regex is kept beside it).
"""

from __future__ import annotations

from typing import Any

import pytest

from bridge_plugins import ProfilingConfig


def create_test_profiling_config(**kwargs: Any) -> ProfilingConfig:
    defaults = {"use_pytorch_profiler": False, "use_nsys_profiler": False}
    defaults.update(kwargs)
    return ProfilingConfig(**defaults)


@pytest.mark.parametrize(
    "use_pytorch_profiler, use_nsys_profiler, expect_assertion_error",
    [
        (True, False, False),  # Only PyTorch enabled
        (False, True, False),  # Only Nsys enabled
        (True, True, True),  # Both enabled (Error)
        (False, False, False),  # Neither enabled
    ],
)
def test_profiling_config_instantiation_validation(use_pytorch_profiler, use_nsys_profiler, expect_assertion_error):
    if expect_assertion_error:
        # MB: AssertionError "Exactly one of pytorch or nsys profiler should be enabled" at container.validate().
        with pytest.raises(
            ValueError, match="use_nsys_profiler and use_pytorch_profiler are both True; they are mutually exclusive"
        ):
            create_test_profiling_config(use_pytorch_profiler=use_pytorch_profiler, use_nsys_profiler=use_nsys_profiler)
    else:
        cfg = create_test_profiling_config(
            use_pytorch_profiler=use_pytorch_profiler, use_nsys_profiler=use_nsys_profiler
        )
        cfg.validate()  # Should pass without error


@pytest.mark.parametrize(
    "profile_step_start, profile_step_end, expect_assertion_error, expected_error_match",
    [
        (10, 20, False, None),  # Valid: end > start
        # MB main: invalid (empty range). MB 0.3.1 accepted it, then nsys never stopped and the torch
        # schedule asserted active > 0 inside the job; we agree with main.
        (10, 10, True, r"profile_step_end=10 must be greater than profile_step_start=10"),
        (0, 5, False, None),  # Valid: start at 0
        (20, 10, True, r"profile_step_end=10 must be greater than profile_step_start=20"),  # end < start
        (-1, 10, True, r"profile_step_start=-1 is negative"),  # MB: "profile_step_start must be >= 0"
        (10, -1, True, r"profile_step_end=-1 is negative"),  # MB: "profile_step_end must be >= 0"
        (-5, -1, True, r"profile_step_start=-5 is negative"),  # both < 0: the start is named first, as in MB
    ],
)
def test_profiling_config_step_range_validation(
    profile_step_start, profile_step_end, expect_assertion_error, expected_error_match
):
    if expect_assertion_error:
        with pytest.raises(ValueError, match=expected_error_match):
            create_test_profiling_config(
                use_pytorch_profiler=True, profile_step_start=profile_step_start, profile_step_end=profile_step_end
            )
    else:
        prof_cfg = create_test_profiling_config(
            use_pytorch_profiler=True, profile_step_start=profile_step_start, profile_step_end=profile_step_end
        )
        prof_cfg.validate()  # MB: finalize(); should pass without error


def test_validation_survives_python_O():
    """Why construction-time ValueErrors beat finalize() asserts: under -O, MB's checks are gone."""
    import subprocess
    import sys

    code = (
        "from bridge_plugins import ProfilingConfig\n"
        "try:\n    ProfilingConfig(use_nsys_profiler=True, use_pytorch_profiler=True)\n"
        "except ValueError:\n    print('rejected')\n"
    )
    out = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "rejected"
