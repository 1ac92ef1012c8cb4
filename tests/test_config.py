"""ProfilingConfig: defaults, semantics helpers, and every validation error."""

import dataclasses

import pytest

from bridge_plugins.config import ProfilingConfig, validate_fields


def test_defaults_match_megatron_bridge_names():
    cfg = ProfilingConfig()
    assert (cfg.use_nsys_profiler, cfg.use_pytorch_profiler) == (False, False)
    assert (cfg.profile_step_start, cfg.profile_step_end) == (10, 12)
    assert cfg.profile_ranks == [0]
    assert (cfg.record_shapes, cfg.record_memory_history) == (False, False)
    assert cfg.memory_snapshot_path == "memory_snapshot.pickle"
    assert cfg.memory_history_max_entries == 100_000
    assert cfg.output_dir is None
    assert ProfilingConfig().profile_ranks is not cfg.profile_ranks  # no shared mutable default


def test_window_and_rank_helpers():
    cfg = ProfilingConfig(profile_step_start=3, profile_step_end=6, profile_ranks=(1, 2))
    assert list(cfg.window_steps()) == [3, 4, 5]
    assert cfg.profile_ranks == [1, 2]  # tuple normalized
    assert [cfg.profiles_rank(r) for r in range(4)] == [False, True, True, False]
    every = ProfilingConfig(profile_ranks=[])
    assert all(every.profiles_rank(r) for r in range(64))
    assert not ProfilingConfig().enabled
    assert ProfilingConfig(record_memory_history=True).enabled


def test_every_field_has_a_docstring_in_the_source():
    import inspect

    src = inspect.getsource(ProfilingConfig)
    for f in dataclasses.fields(ProfilingConfig):
        line = next(l for l in src.splitlines() if l.strip().startswith(f"{f.name}:"))
        after = src.splitlines()[src.splitlines().index(line) + 1].strip()
        assert after.startswith('"""'), f"{f.name} has no one-line docstring"


BAD = [
    (dict(use_nsys_profiler=True, use_pytorch_profiler=True), ValueError, ["use_nsys_profiler", "use_pytorch_profiler", "mutually exclusive"]),
    (dict(profile_step_start=-1, profile_step_end=3), ValueError, ["profile_step_start", "-1", ">= 0"]),
    (dict(profile_step_start=0, profile_step_end=-2), ValueError, ["profile_step_end", "-2"]),
    (dict(profile_step_start=5, profile_step_end=5), ValueError, ["profile_step_end=5", "profile_step_start=5", "at least 6"]),
    (dict(profile_step_start=7, profile_step_end=5), ValueError, ["profile_step_end=5", "at least 8"]),
    (dict(profile_step_start=1.5), TypeError, ["profile_step_start", "1.5", "int"]),
    (dict(profile_step_start=True), TypeError, ["profile_step_start", "True"]),
    (dict(profile_ranks=[0, -1]), ValueError, ["profile_ranks", "-1"]),
    (dict(profile_ranks=[0, "1"]), TypeError, ["profile_ranks", "'1'", "int"]),
    (dict(profile_ranks=[1, 1]), ValueError, ["profile_ranks", "repeats", "[1]"]),
    (dict(profile_ranks=0), TypeError, ["profile_ranks", "list"]),
    (dict(profile_ranks=[True]), TypeError, ["profile_ranks", "True"]),
    (dict(use_nsys_profiler="true"), TypeError, ["use_nsys_profiler", "'true'", "bool"]),
    (dict(record_shapes=1), TypeError, ["record_shapes", "1", "bool"]),
    (dict(record_memory_history="false"), TypeError, ["record_memory_history", "'false'"]),
    (dict(memory_snapshot_path=""), ValueError, ["memory_snapshot_path", "empty"]),
    (dict(memory_snapshot_path="  "), ValueError, ["memory_snapshot_path", "empty"]),
    (dict(memory_snapshot_path="snaps/"), ValueError, ["memory_snapshot_path", "snaps/", "directory"]),
    (dict(memory_snapshot_path=None), TypeError, ["memory_snapshot_path", "None"]),
    (dict(memory_history_max_entries=0), ValueError, ["memory_history_max_entries", "0"]),
    (dict(output_dir=""), ValueError, ["output_dir", "empty"]),
]


@pytest.mark.parametrize("kwargs,exc,words", BAD, ids=[str(b[0]) for b in BAD])
def test_validation_errors_name_field_value_and_fix(kwargs, exc, words):
    with pytest.raises(exc) as info:
        ProfilingConfig(**kwargs)
    for w in words:
        assert w in str(info.value), (w, str(info.value))
    # the same check is reusable without constructing (the plugins validate before touching anything)
    with pytest.raises(exc):
        validate_fields(kwargs)


def test_snapshot_path_naming_an_existing_directory(tmp_path):
    with pytest.raises(ValueError, match="names a directory"):
        ProfilingConfig(memory_snapshot_path=str(tmp_path))


def test_relative_snapshot_path_is_checked_where_the_job_resolves_it(tmp_path, monkeypatch):
    (tmp_path / "out" / "snaps").mkdir(parents=True)
    with pytest.raises(ValueError, match="names a directory"):
        ProfilingConfig(output_dir=str(tmp_path / "out"), memory_snapshot_path="snaps")
    monkeypatch.chdir(tmp_path / "out")  # a directory 'snaps' here is not where the job writes
    assert ProfilingConfig(output_dir=str(tmp_path / "elsewhere"), memory_snapshot_path="snaps").memory_snapshot_path == "snaps"


def test_output_dir_naming_a_file(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ValueError, match="existing file"):
        ProfilingConfig(output_dir=str(f))


def test_unknown_field_in_validate_fields():
    with pytest.raises(TypeError, match="no field"):
        validate_fields({"profile_step_begin": 3})


def test_validate_reruns_after_mutation():
    cfg = ProfilingConfig()
    cfg.profile_step_end = 1
    cfg.profile_step_start = 4
    with pytest.raises(ValueError, match="profile_step_end=1"):
        cfg.validate()


def test_config_module_imports_neither_torch_nor_nemo_run():
    import subprocess
    import sys

    code = "import sys, bridge_plugins, bridge_plugins.config; print('torch' in sys.modules, 'nemo_run' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]
