"""Overrides arrive as typed or are refused naming the key (issue 19.2): YAML would read
``/data/run #3`` as ``/data/run``, ``true`` as a bool, ``1:30`` as 90 and ``["0"]`` as ``[0]``.
The recipe's model and optimizer values are checked before training."""

from __future__ import annotations

import pytest

from bridge_plugins.config.override_values import override_value
from recipes.overrides import OverrideError, parse_overrides
from recipes.train import main


@pytest.mark.parametrize(
    "value",
    ["/data/run #3", "true", "1:30", "[unclosed", "*alias", "%", "{a", "a\\b", "x\ny", "'", "0x10", "#", " a "],
)
def test_an_unquoted_string_arrives_verbatim(value):
    assert parse_overrides([f"profiling.output_dir={value}"]).profiling.output_dir == value


@pytest.mark.parametrize("value", ["/data/run #3", "true", "1:30", "", "null", "a\\b", "x\ny", "${train.seed}", "'"])
def test_a_string_the_plugins_wrote_arrives_verbatim(value):
    arg = f"profiling.memory_snapshot_path={override_value(value + '/s.pickle')}"
    assert parse_overrides([arg]).profiling.memory_snapshot_path == value + "/s.pickle"


def test_null_still_means_none_for_an_optional_string():
    assert parse_overrides(["profiling.output_dir=null"]).profiling.output_dir is None
    assert parse_overrides(["profiling.output_dir='null'"]).profiling.output_dir == "null"


@pytest.mark.parametrize(
    "arg,value",
    [
        ("profiling.profile_step_start=010", 10),  # YAML 1.1 reads 010 as octal 8
        ("profiling.profile_step_start= 7", 7),
        ("profiling.use_pytorch_profiler=True", True),
        ("profiling.profile_ranks=[ 0, 3 ]", [0, 3]),
        ("optimizer.lr=3e-3", 3e-3),  # YAML 1.1 reads 3e-3 as a string
        ("optimizer.lr=1", 1.0),
    ],
)
def test_typed_values(arg, value):
    cfg = parse_overrides([arg])
    section, name = arg.split("=")[0].split(".")
    got = getattr(getattr(cfg, section), name)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize(
    "arg,words",
    [
        ("profiling.profile_step_start=1:30", ["profiling.profile_step_start", "'1:30'", "an int"]),
        ("profiling.profile_step_start=0x10", ["profiling.profile_step_start", "an int"]),
        ("profiling.profile_step_start=3 #c", ["profiling.profile_step_start", "an int"]),
        ("profiling.profile_step_end=9223372036854775808", ["profiling.profile_step_end", "int64"]),
        ("profiling.use_pytorch_profiler=2", ["profiling.use_pytorch_profiler", "'2'", "not a valid bool"]),
        ("profiling.use_pytorch_profiler=yes", ["profiling.use_pytorch_profiler", "not a valid bool"]),
        ('profiling.profile_ranks=["0"]', ["profiling.profile_ranks", "list of ints"]),
        ("profiling.profile_ranks=0", ["profiling.profile_ranks", "list of ints"]),
        ("profiling.profile_ranks=[0x1]", ["profiling.profile_ranks", "list of ints"]),
        ("optimizer.lr=.inf", ["optimizer.lr", "finite"]),
        ("optimizer.lr=nan", ["optimizer.lr", "finite"]),
        ("optimizer.lr=1:30", ["optimizer.lr", "a number"]),
        ('profiling.output_dir="a" #3', ["profiling.output_dir", "quoted"]),
        ("profiling.output_dir='a' b", ["profiling.output_dir", "quoted"]),
        ("profiling.output_dir='q", ["profiling.output_dir", "quoted"]),
        ('profiling.output_dir="q', ["profiling.output_dir", "quoted"]),
        ("profiling.output_dir=${", ["profiling.output_dir"]),
    ],
)
def test_values_yaml_would_change_are_refused_naming_the_key(arg, words):
    with pytest.raises(OverrideError) as info:
        parse_overrides([arg])
    for w in words:
        assert w in str(info.value), (w, str(info.value))


@pytest.mark.parametrize(
    "arg,words",
    [
        ("model.num_heads=0", ["model.num_heads=0", ">= 1"]),
        ("model.hidden_size=65", ["model.hidden_size=65", "model.num_heads=4", "divisible"]),
        ("model.num_layers=-1", ["model.num_layers=-1", ">= 1"]),
        ("model.vocab_size=0", ["model.vocab_size=0"]),
        ("model.ffn_multiplier=0", ["model.ffn_multiplier=0"]),
        ("optimizer.lr=-1", ["optimizer.lr=-1.0", ">= 0"]),
        ("optimizer.weight_decay=-0.5", ["optimizer.weight_decay=-0.5"]),
    ],
)
def test_recipe_values_are_checked_before_training(arg, words, capsys):
    with pytest.raises(OverrideError) as info:
        parse_overrides([arg])
    for w in words:
        assert w in str(info.value), (w, str(info.value))
    assert main([arg]) == 2  # before any model is built
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
