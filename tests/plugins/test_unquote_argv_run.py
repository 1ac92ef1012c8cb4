"""A real LocalExecutor+torchrun run: the job's sys.argv holds each arg as written, without quotes.

NeMo Run shell-quotes run.Script args for torchrun and LocalExecutor starts torchrun without a
shell; the plugin routes the job through ``bridge_plugins/runtime/entry/unquote_argv.py``. The job
here is a tiny script that records what Python gave it (sys.argv, sys.path[0], __name__).
"""

from __future__ import annotations

import json
from pathlib import Path

import nemo_run as run
import pytest
from torchx.specs import AppState

from bridge_plugins import PyTorchProfilerPlugin
from bridge_plugins.plugins import FaultTolerancePlugin
from bridge_plugins.plugins.script_overrides import UNQUOTE_ARGV
from tests.support import ROOT, job_logs, use_clean_env

pytestmark = pytest.mark.integration

RECORDER = """\
import json, os, sys
out = os.path.join(os.environ["ARGV_DIR"], "rank" + os.environ.get("RANK", "x") + ".json")
with open(out, "w") as f:
    json.dump({"argv": sys.argv, "path0": sys.path[0], "name": __name__}, f)
"""
# Shell metacharacters in the user's own args: each must arrive exactly as written.
USER_ARGS = ['train.note=it\'s $HOME; `x` "q" *', "a b", "", "--flag", "x=[1, 2]"]


@pytest.fixture(autouse=True)
def job_env(nemo_home, monkeypatch):
    use_clean_env(monkeypatch)
    monkeypatch.chdir(ROOT)


def run_script(tmp_path: Path, executor, plugins):
    script = tmp_path / "job dir" / "record_argv.py"  # a space in the script's own path, too
    script.parent.mkdir()
    script.write_text(RECORDER)
    out = tmp_path / "argv"
    out.mkdir()
    task = run.Script(path=str(script), entrypoint="python", args=list(USER_ARGS), env={"ARGV_DIR": str(out)})
    with run.Experiment("unquote", log_level="WARN") as exp:
        exp.add(task, executor=executor, plugins=plugins, name="job")
        exp.run(detach=False)
    job = exp.jobs[0]
    assert job.state == AppState.SUCCEEDED, job_logs(Path(job.executor.job_dir))[-4000:]
    return script, {p.stem: json.loads(p.read_text()) for p in out.iterdir()}


def test_local_torchrun_job_sys_argv_holds_args_as_written(tmp_path):
    plugin = PyTorchProfilerPlugin(profile_step_start=3, profile_step_end=5, profile_ranks=[0, 1])
    script, seen = run_script(tmp_path, run.LocalExecutor(ntasks_per_node=2, launcher="torchrun"), [plugin])
    expected = [
        str(script),
        *USER_ARGS,
        "profiling.use_pytorch_profiler=true",
        "profiling.profile_step_start=3",
        "profiling.profile_step_end=5",
        "profiling.profile_ranks=[0,1]",
        "profiling.record_memory_history=false",
        "profiling.memory_snapshot_path=memory_snapshot.pickle",
        "profiling.record_shapes=false",
    ]
    assert sorted(seen) == ["rank0", "rank1"]
    for rank in seen.values():
        assert rank == {"argv": expected, "path0": str(script.parent), "name": "__main__"}


def test_without_a_quoting_launcher_the_job_is_not_rerouted(tmp_path):
    plugin = PyTorchProfilerPlugin(profile_step_start=3, profile_step_end=5, memory_snapshot_path="/m n/s.pickle")
    script, seen = run_script(tmp_path, run.LocalExecutor(), [plugin])
    (rank,) = seen.values()
    assert rank["argv"][: len(USER_ARGS) + 1] == [str(script), *USER_ARGS]
    assert 'profiling.memory_snapshot_path="/m n/s.pickle"' in rank["argv"]
    assert UNQUOTE_ARGV not in json.dumps(seen)


def test_fault_tolerance_on_local_routes_once(tmp_path):
    """FT after a profiler plugin: one route, not two (ft_launcher itself is not installed here)."""
    from tests.launch_support import assigned

    task = run.Script(path="/x/train.py", entrypoint="python", args=["a b"])
    executor = assigned(run.LocalExecutor(ntasks_per_node=2, launcher="torchrun"), tmp_path)
    PyTorchProfilerPlugin().setup(task, executor)
    FaultTolerancePlugin().setup(task, executor)
    PyTorchProfilerPlugin().setup(task, executor)
    assert task.path == UNQUOTE_ARGV and task.args[:3] == ["--quoted", "/x/train.py", "a b"]
    assert task.args.count("/x/train.py") == 1 and "ft.enable_ft_package=true" in task.args


METACHARACTERS = ["a b", "it's", '"q"', "$HOME", "${x}", "`id`", "a;b|c&d", "*", "[0,1]", "", "\\n", "\n", "é ü", "'"]


def test_unquote_argv_undoes_exactly_shlex_quote_and_nothing_else():
    import runpy

    entry = runpy.run_path(UNQUOTE_ARGV)  # the file the job runs, loaded as a module here
    unquoted, job_args = entry["unquoted"], entry["job_args"]
    import shlex

    for s in METACHARACTERS:
        assert unquoted(shlex.quote(s)) == s
    # not what shlex.quote writes: left alone (exp.run(direct=True) hands over shell-parsed args)
    for s in ["'a'b", "'a", "a b", "x'y'"]:
        assert unquoted(s) == s
    quoted = [shlex.quote(s) for s in METACHARACTERS]
    assert job_args(["--quoted", "--nsys-postfix", "-m", "m", *quoted, ""]) == ["-m", "m", *METACHARACTERS]
    assert job_args(["--nsys-postfix", "p.py", "a b", ""]) == ["p.py", "a b"]
    assert job_args(["--nsys-postfix", "p.py", "a b"]) == ["p.py", "a b"]  # run directly: no postfix


def test_route_follows_the_launcher_set_by_a_later_plugin(tmp_path, monkeypatch):
    from bridge_plugins.plugins import NsysPlugin
    from tests.launch_support import assigned
    from tests.support import system_path_without_nsys

    monkeypatch.setenv("PATH", system_path_without_nsys())  # the nsys presence warning, also where nsys is installed
    task = run.Script(path="train", m=True, entrypoint="python", args=["a=1"])
    executor = assigned(run.LocalExecutor(), tmp_path)
    with pytest.warns(Warning):  # no nsys binary here
        NsysPlugin().setup(task, executor)
    assert (task.path, task.args[:3]) == (UNQUOTE_ARGV, ["--nsys-postfix", "-m", "train"])
    with pytest.warns(Warning, match="nsys profiling is disabled"):
        FaultTolerancePlugin().setup(task, executor)  # switches nsys off, runs ft_launcher (quotes)
    assert task.args[:4] == ["--quoted", "-m", "train", "a=1"]
    executor.launcher = None  # e.g. the user takes ft_launcher away again: un-routed
    PyTorchProfilerPlugin().setup(task, executor)
    assert (task.path, task.m, task.args[0]) == ("train", True, "a=1")
