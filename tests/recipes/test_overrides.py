"""The job's command-line overrides: OmegaConf dotlist parsing, errors before training."""

import pytest

from recipes.overrides import OverrideError, parse_overrides, valid_keys
from recipes.train import main


def test_overrides_apply_to_defaults():
    cfg = parse_overrides(
        [
            "profiling.use_pytorch_profiler=true",
            "profiling.profile_ranks=[0,1]",
            "train.train_iters=30",
            "profiling.output_dir=/tmp/x",
            "optimizer.lr=0.5",
        ]
    )
    assert cfg.profiling.use_pytorch_profiler is True
    assert cfg.profiling.profile_ranks == [0, 1]
    assert cfg.train.train_iters == 30
    assert cfg.profiling.output_dir == "/tmp/x"
    assert cfg.optimizer.lr == 0.5
    assert cfg.model.hidden_size == 64  # untouched


def test_awkward_string_values_survive():
    cfg = parse_overrides(['profiling.memory_snapshot_path="/data/my run/snap;1.pickle"'])
    assert cfg.profiling.memory_snapshot_path == "/data/my run/snap;1.pickle"
    cfg = parse_overrides(["profiling.memory_snapshot_path=/data/my run/snap;1.pickle"])
    assert cfg.profiling.memory_snapshot_path == "/data/my run/snap;1.pickle"


def test_empty_arguments_are_ignored():
    # NeMo Run's local launcher appends a literal '' when nsys is on
    cfg = parse_overrides(["train.train_iters=3", ""])
    assert cfg.train.train_iters == 3


def test_empty_ranks_list_means_all():
    assert parse_overrides(["profiling.profile_ranks=[]"]).profiling.profile_ranks == []


@pytest.mark.parametrize(
    "args,words",
    [
        (["foo.bar=1"], ["unknown override key 'foo.bar'", "profiling.profile_ranks", "train.train_iters"]),
        (["profiling.profile_step=3"], ["unknown override key", "profiling.profile_step_start"]),
        (["train.train_iters"], ["not of the form key=value", "valid keys"]),
        (["profiling.use_pytorch_profiler=maybe"], ["profiling.use_pytorch_profiler=maybe", "not a valid bool"]),
        (["train.train_iters=abc"], ["train.train_iters=abc", "abc"]),
        (["profiling.profile_ranks=[a]"], ["profiling.profile_ranks=[a]"]),
        (["profiling.profile_ranks=[0,0]"], ["profile_ranks", "repeats"]),
        (["profiling.profile_step_start=6", "profiling.profile_step_end=6"], ["profile_step_end=6", "at least 7"]),
        (["profiling.use_pytorch_profiler=true", "profiling.use_nsys_profiler=true"], ["mutually exclusive"]),
        (["profiling.memory_snapshot_path="], ["memory_snapshot_path"]),
        (["train.device=gpu"], ["train.device='gpu'", "'cuda'"]),
        (["train.train_iters=0"], ["train.train_iters=0", ">= 1"]),
    ],
)
def test_bad_overrides_fail_with_a_useful_message(args, words):
    with pytest.raises(OverrideError) as info:
        parse_overrides(args)
    for w in words:
        assert w in str(info.value), (w, str(info.value))


def test_main_fails_before_training_with_exit_code_2(capsys):
    assert main(["nope=1"]) == 2
    err = capsys.readouterr().err
    assert "unknown override key 'nope'" in err and "train.train_iters" in err


def test_valid_keys_cover_every_profiling_field():
    from bridge_plugins.config.profiling import profiling_fields

    keys = valid_keys()
    assert {f"profiling.{f}" for f in profiling_fields()} <= set(keys)
    assert "ft.enable_ft_package" in keys


def test_arguments_that_arrive_still_shell_quoted_are_unquoted_once():
    # NeMo Run quotes Script args for torchrun; LocalExecutor passes them without a shell
    cfg = parse_overrides(["'profiling.profile_ranks=[0,1]'", "'profiling.memory_snapshot_path=\"/a b/c;d.pickle\"'"])
    assert cfg.profiling.profile_ranks == [0, 1]
    assert cfg.profiling.memory_snapshot_path == "/a b/c;d.pickle"


@pytest.mark.parametrize("value", ["[unclosed", "*alias", "%", "{a"])
def test_yaml_syntax_errors_are_bad_overrides_not_tracebacks(value, capsys):
    arg = f"profiling.profile_ranks={value}"  # for a str field these arrive verbatim (test_typed_overrides)
    with pytest.raises(OverrideError) as info:
        parse_overrides([arg])
    assert repr(arg) in str(info.value) and "list of ints" in str(info.value)
    assert main([arg]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: bad value in override") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_help_lists_every_key_with_its_type_and_default(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ") and "." in line.split()[0]}
    assert set(rows) == set(valid_keys())
    assert "int" in rows["train.train_iters"] and "default 20" in rows["train.train_iters"]
    assert "list[int]" in rows["profiling.profile_ranks"] and "default [0]" in rows["profiling.profile_ranks"]
    assert "str | None" in rows["profiling.output_dir"] and "default None" in rows["profiling.output_dir"]
    assert "default 'memory_snapshot.pickle'" in rows["profiling.memory_snapshot_path"]
    assert "First profiled step" in rows["profiling.profile_step_start"], "the field's docstring"
