"""A mistyped override key names the closest keys ("did you mean"), as git does for a mistyped
command, instead of every key (issue 33, point 6)."""

from __future__ import annotations

import pytest

from recipes.overrides import OverrideError, parse_overrides, valid_keys


def error_of(arg: str) -> str:
    with pytest.raises(OverrideError) as info:
        parse_overrides([arg])
    return str(info.value)


@pytest.mark.parametrize(
    "arg,meant",
    [
        ("profiling.profile_rank=[0]", "did you mean 'profiling.profile_ranks'?"),
        ("train.train_iter=3", "did you mean 'train.train_iters'?"),
        ("profilng.use_nsys_profiler=true", "did you mean 'profiling.use_nsys_profiler'"),
    ],
)
def test_a_mistyped_key_names_the_closest_key_and_not_every_key(arg, meant):
    message = error_of(arg)
    assert meant in message, message
    assert "model.vocab_size" not in message, "every key listed again"


def test_a_key_unlike_any_in_its_section_lists_that_section_only():
    message = error_of("profiling.nonexist=1")
    assert message.startswith("unknown override key 'profiling.nonexist' (in 'profiling.nonexist=1'); "), message
    listed = [k for k in valid_keys() if k in message]
    assert listed and all(k.startswith("profiling.") for k in listed), listed
    assert "did you mean" not in message
    assert "python -m recipes.train --help" in message
