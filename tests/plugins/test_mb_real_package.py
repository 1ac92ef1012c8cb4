"""Our plugins beside the real Megatron Bridge 0.6.2: its parser accepts what ours send.

scripts/install_mb.sh puts MB's files in .mb/ (this test runs it when they are missing); the
stubs needed to load them on a CPU box are named in tests/plugins/mb_package.py. For each executor
(LocalExecutor with and without torchrun, SlurmExecutor with and without torchrun, DockerExecutor
with and without torchrun) and each plugin, MB's plugin and ours set up the same run.Script with the
same settings; the argv each job would receive (tests/plugins/job_argv.py: the real shell stages)
is fed to MB's own override parser in a process of its own (tests/plugins/mb_parse.py). run.Partial:
MB's plugins refuse it; ours write MB's ProfilingConfig, which MB's validation accepts.

The outcome table goes to .mb/executor_table.md and to stdout (pytest -s).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import fiddle as fdl
import nemo_run as run
import pytest

import bridge_plugins.plugins as ours
from bridge_plugins import ProfilingConfig
from recipes.config import FaultToleranceConfig as OurFaultToleranceConfig
from recipes.tiny_gpt import tiny_gpt_script
from tests.launch_support import dryrun, slurm
from tests.plugins import mb_package
from tests.plugins.job_argv import job_argv
from tests.support import FAKE_NSYS, ROOT

# the real Megatron Bridge parsers on every executor: seconds per test
pytestmark = [pytest.mark.usefixtures("nemo_home"), pytest.mark.slow]

EXECUTORS = {
    "LocalExecutor": lambda: run.LocalExecutor(),
    "LocalExecutor + torchrun": lambda: run.LocalExecutor(ntasks_per_node=2, launcher="torchrun"),
    "SlurmExecutor": lambda: slurm(),
    "SlurmExecutor + torchrun": lambda: slurm(launcher="torchrun"),
    "DockerExecutor": lambda: run.DockerExecutor(container_image="img"),
    "DockerExecutor + torchrun": lambda: run.DockerExecutor(container_image="img", launcher="torchrun"),
}
WINDOW = dict(profile_step_start=3, profile_step_end=5, profile_ranks=[0, 1])
SETTINGS = {  # the same settings for MB's plugin and ours: Megatron Bridge's fields only
    "NsysPlugin": WINDOW,
    "PyTorchProfilerPlugin": {**WINDOW, "record_memory_history": True, "memory_snapshot_path": "snapshot.pickle"},
    "FaultTolerancePlugin": {"calc_ft_timeouts": False},
}
USER_ARGS = ["train.train_iters=8"]
# Where our defaults differ from Megatron Bridge's on purpose (docs/megatron-bridge.md says why).
PLUGIN_DEFAULT_DIFFERENCES = {
    ("NsysPlugin", "profile_step_start"): "MB: required; ours 10, as ProfilingConfig",
    ("NsysPlugin", "profile_step_end"): "MB: required; ours 12, as ProfilingConfig",
    ("PyTorchProfilerPlugin", "profile_step_start"): "MB: required; ours 10",
    ("PyTorchProfilerPlugin", "profile_step_end"): "MB: required; ours 12",
    ("PyTorchProfilerPlugin", "memory_snapshot_path"): "MB: snapshot.pickle in the working dir; ours under output_dir",
}
CONFIG_DEFAULT_DIFFERENCES = {
    "memory_snapshot_path": "MB: /nemo_run/snapshot.pickle; ours memory_snapshot.pickle under output_dir"
}
TABLE = mb_package.MB_DIR / "executor_table.md"


@pytest.fixture(scope="module")
def mb():
    """MB's run_plugins and config classes; installs them first if needed (skips only if unreachable)."""
    if mb_package.problem():
        subprocess.run(
            ["bash", str(ROOT / "scripts" / "install_mb.sh")],
            env={**os.environ, "PYTHON": sys.executable},
            capture_output=True,
            timeout=600,
        )
    why = mb_package.problem()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and the Megatron Bridge package is missing: {why}")
        pytest.skip(why)
    return mb_package.load()


def mb_parse(cases):
    """{id: result} from MB's parser for [{"id", "argv", "sections"}] (one process for all)."""
    proc = subprocess.run(
        [sys.executable, str(Path(mb_package.__file__).with_name("mb_parse.py"))],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.fixture
def nsys_on_path(tmp_path, monkeypatch):
    """Ours refuse a LocalExecutor nsys job with no nsys where it runs (dry runs too): the stand-in."""
    bindir = tmp_path / "nsysbin"
    bindir.mkdir()
    (bindir / "nsys").symlink_to(FAKE_NSYS)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")


def received(plugin, executor_name, tmp_path):
    tmp_path.mkdir(parents=True)
    exp = dryrun(tiny_gpt_script(*USER_ARGS), EXECUTORS[executor_name](), [plugin])
    return job_argv(exp.jobs[0], tmp_path)


def mb_converter_output(mb, name):
    """What MB's own default converter writes for SETTINGS[name] (its ScriptArgs, its function)."""
    rp = mb.run_plugins
    if name == "FaultTolerancePlugin":
        return rp._default_fault_tolerance_converter(
            rp.FaultTolerancePluginScriptArgs(enable_ft_package=True, calc_ft_timeouts=False)
        )
    if name == "NsysPlugin":
        return rp._default_nsys_converter(rp.NsysPluginScriptArgs(record_shapes=False, **WINDOW))
    return rp._default_pytorch_profiler_converter(
        rp.PyTorchProfilerPluginScriptArgs(record_shapes=False, **SETTINGS["PyTorchProfilerPlugin"])
    )


def cell(result):
    return "accepts" if result["ok"] else f"rejects: `{result['error'][:110]}`"


def test_mb_parser_accepts_what_ours_send_on_every_executor(mb, tmp_path, nsys_on_path):
    rows, cases = [], []
    for executor_name in EXECUTORS:
        for name, settings in SETTINGS.items():
            if executor_name.startswith("DockerExecutor") and name == "NsysPlugin":
                continue  # the stand-in nsys writes its report to /nemo_run, which only the container has
            argv = {}
            for side, module in (("mb", mb.run_plugins), ("ours", ours)):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    plugin = getattr(module, name)(**settings)
                argv[side] = received(plugin, executor_name, tmp_path / f"{len(rows)}{side}")
            row = dict(executor=executor_name, plugin=name, **argv, converter=USER_ARGS + mb_converter_output(mb, name))
            rows.append(row)
            for side in ("mb", "ours"):
                cases.append({"id": f"{len(rows) - 1}:{side}", "argv": argv[side], "sections": ["profiling", "ft"]})
    # Ours with one of our own keys set (a feature MB does not have): MB's parser refuses that key.
    own = ours.NsysPlugin(nvtx_per_op=True, **WINDOW)
    extra = received(own, "SlurmExecutor", tmp_path / "own")
    cases.append({"id": "own", "argv": extra, "sections": ["profiling", "ft"]})
    results = mb_parse(cases)

    lines = [
        f"MB 0.6.2 parser (process_config_with_overrides, hydra-core {results['_versions']['hydra']}, "
        f"omegaconf {results['_versions']['omegaconf']}) on each job's argv, run.Script `python -m recipes.train "
        f"{' '.join(USER_ARGS)}`, Megatron Bridge's fields only:",
        "",
        "| executor | plugin | MB's plugins' argv | our plugins' argv | ours byte-identical to MB's converter |",
        "|---|---|---|---|---|",
    ]
    for i, row in enumerate(rows):
        mb_r, our_r = results[f"{i}:mb"], results[f"{i}:ours"]
        row.update(mb_result=mb_r, our_result=our_r)
        same = "yes" if row["ours"] == row["converter"] else "NO"
        lines.append(f"| {row['executor']} | {row['plugin']} | {cell(mb_r)} | {cell(our_r)} | {same} |")
    lines += [
        "| DockerExecutor (+ torchrun) | NsysPlugin | not run: the stand-in nsys writes under /nemo_run | (same path as PyTorchProfilerPlugin) | |",
        f"| SlurmExecutor | our NsysPlugin(nvtx_per_op=True), a key of ours only | | {cell(results['own'])} | |",
        "| any | run.Partial, each plugin | MB 0.6.2: NotImplementedError (run.Script only) | writes MB's ProfilingConfig/FT config (test below) | |",
    ]
    table = "\n".join(lines)
    TABLE.parent.mkdir(exist_ok=True)
    TABLE.write_text(table + "\n")
    print("\n" + table)

    for row in rows:
        where = f"{row['plugin']} on {row['executor']}:\n{table}"
        assert row["our_result"]["ok"], where  # ours are accepted everywhere, MB's or not
        assert row["ours"] == row["converter"], where  # byte for byte what MB's converter writes
        if row["mb_result"]["ok"]:  # and where MB's are accepted, they configure the same
            assert row["our_result"] == row["mb_result"], where
    assert not results["own"]["ok"] and "Could not override 'profiling.nvtx_per_op'" in results["own"]["error"]
    # What MB's own plugins get on LocalExecutor (NeMo Run's quotes, nsys's empty arg): rejected.
    by = {(r["executor"], r["plugin"]): r["mb_result"]["ok"] for r in rows}
    assert by[("LocalExecutor + torchrun", "PyTorchProfilerPlugin")] is False
    assert by[("LocalExecutor", "NsysPlugin")] is False


def mb_pretrain(config) -> None:
    """A training function for run.Partial (never called: the config is built, not trained)."""


@pytest.mark.parametrize("executor_name", ["LocalExecutor", "SlurmExecutor + torchrun"])
def test_partial_gets_mbs_own_profiling_config(mb, executor_name, nsys_on_path):
    def task():
        return run.Partial(
            mb_pretrain,
            config=run.Config(
                mb.Container, profiling=run.Config(mb.ProfilingConfig), ft=run.Config(mb.FaultToleranceConfig)
            ),
        )

    with pytest.raises(NotImplementedError, match="only supported for run.Script"):
        mb.run_plugins.NsysPlugin(**WINDOW).setup(task(), EXECUTORS[executor_name]())
    for name, settings in SETTINGS.items():
        t, executor = task(), EXECUTORS[executor_name]()
        executor.assign("mbtest_1", "/tmp/mb-exp", task_id="job", task_dir="job")
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            getattr(ours, name)(**settings).setup(t, executor)
        assert [str(w.message) for w in seen if "has no field" in str(w.message)] == []
        cfg = fdl.build(t.config)
        assert isinstance(cfg.profiling, mb.ProfilingConfig)
        cfg.profiling.finalize()  # MB's own validation
        if name == "FaultTolerancePlugin":
            assert (cfg.ft.enable_ft_package, cfg.ft.calc_ft_timeouts) == (True, False)
            continue
        assert (cfg.profiling.profile_step_start, cfg.profiling.profile_step_end) == (3, 5)
        assert cfg.profiling.profile_ranks == [0, 1]
        flag = "use_nsys_profiler" if name == "NsysPlugin" else "use_pytorch_profiler"
        assert getattr(cfg.profiling, flag) is True


def _defaults(cls):
    out = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
        else:
            out[f.name] = "<required>"
    return out


@pytest.mark.parametrize("name", ["NsysPlugin", "PyTorchProfilerPlugin", "FaultTolerancePlugin"])
def test_plugin_fields_and_defaults_match(mb, name):
    theirs, mine = _defaults(getattr(mb.run_plugins, name)), _defaults(getattr(ours, name))
    assert set(theirs) <= set(mine), set(theirs) - set(mine)
    differ = {k: (v, mine[k]) for k, v in theirs.items() if mine[k] != v and k != "script_args_converter_fn"}
    assert set(differ) == {k for (p, k) in PLUGIN_DEFAULT_DIFFERENCES if p == name}, differ


@pytest.mark.parametrize(
    "name", ["NsysPluginScriptArgs", "PyTorchProfilerPluginScriptArgs", "FaultTolerancePluginScriptArgs"]
)
def test_script_args_classes_match(mb, name):
    assert [f.name for f in dataclasses.fields(getattr(ours, name))] == [
        f.name for f in dataclasses.fields(getattr(mb.run_plugins, name))
    ]


def test_config_fields_and_defaults_match(mb):
    theirs, mine = _defaults(mb.ProfilingConfig), _defaults(ProfilingConfig)
    assert set(theirs) <= set(mine), set(theirs) - set(mine)
    assert {k for k, v in theirs.items() if mine[k] != v} == set(CONFIG_DEFAULT_DIFFERENCES)
    ft_theirs, ft_mine = _defaults(mb.FaultToleranceConfig), _defaults(OurFaultToleranceConfig)
    for key in ("enable_ft_package", "calc_ft_timeouts"):  # what FaultTolerancePlugin writes
        assert ft_theirs[key] == ft_mine[key]


@pytest.mark.parametrize(
    "window",
    [
        dict(profile_step_start=0, profile_step_end=1, profile_ranks=[0], record_shapes=True),
        dict(profile_step_start=100, profile_step_end=2000, profile_ranks=[3, 1, 7], record_shapes=False),
    ],
)
def test_converters_byte_identical_to_mbs(mb, window):
    rp = mb.run_plugins
    assert ours._default_nsys_converter(ours.NsysPluginScriptArgs(**window)) == rp._default_nsys_converter(
        rp.NsysPluginScriptArgs(**window)
    )
    # (a path MB writes bare but its own parser rejects, such as ~/x.pickle, ours quotes: not compared)
    for path in ["snapshot.pickle", "/nemo_run/snap_1.pickle", "a-b.c", "x_1.2.pickle"]:
        kw = dict(window, record_memory_history=True, memory_snapshot_path=path)
        assert ours._default_pytorch_profiler_converter(
            ours.PyTorchProfilerPluginScriptArgs(**kw)
        ) == rp._default_pytorch_profiler_converter(rp.PyTorchProfilerPluginScriptArgs(**kw))
    for a, b in [(True, True), (False, True), (True, False)]:
        assert ours._default_fault_tolerance_converter(
            ours.FaultTolerancePluginScriptArgs(a, b)
        ) == rp._default_fault_tolerance_converter(rp.FaultTolerancePluginScriptArgs(a, b))


# Shell metacharacters and non-ASCII: quoted by ours for every shell layer, read back exactly by
# MB's parser. (MB's plugins write such a value bare: bash splits it on Slurm and Docker.) Not
# covered, because Hydra's quoted strings and OmegaConf's YAML read them differently: backslashes,
# control characters and '${' (ours reads those verbatim; docs/megatron-bridge.md).
METACHARACTERS = '/data/my run/snap;1 it\'s $HOME `x` "q" *[0] é.pickle'
NO_SINGLE_QUOTE = METACHARACTERS.replace("'", "")  # Docker+torchrun refuses ' (NeMo Run's quotes there break it)


def test_metacharacter_values_reach_mbs_parser_intact(mb, tmp_path):
    cases, value = [], {n: NO_SINGLE_QUOTE if n == "DockerExecutor + torchrun" else METACHARACTERS for n in EXECUTORS}
    for name in EXECUTORS:
        plugin = ours.PyTorchProfilerPlugin(memory_snapshot_path=value[name], record_memory_history=True, **WINDOW)
        argv = received(plugin, name, tmp_path / name.replace(" ", "_"))
        cases.append({"id": name, "argv": argv, "sections": ["profiling", "ft"]})
    results = mb_parse(cases)
    for name in EXECUTORS:
        assert results[name]["ok"], (name, results[name])
        assert results[name]["profiling"]["memory_snapshot_path"] == value[name], name


def test_bare_or_quoted_strings_read_back_by_both_parsers(mb):
    """Every string over a small alphabet, and YAML's and Hydra's special words: written by
    ``override_value`` (bare when a plain word, as MB writes it, else quoted), read back unchanged by
    MB's parser and by our job's."""
    import itertools

    from omegaconf import OmegaConf

    from bridge_plugins.config.override_values import is_plain_word, override_value

    alphabet = "a1._/-~eE+"
    words = ["".join(p) for n in (1, 2, 3) for p in itertools.product(alphabet, repeat=n)]
    words += ["true", "False", "null", "None", "~", "1e3", "nan", ".inf", "-inf", "0x1f", "1_000", "yes", "off"]
    words += ["snapshot.pickle", "/nemo_run/snapshot.pickle", "a b", "x,y", "[0]", "{a: 1}", "é"]
    cases = [
        {"id": w, "argv": [f"profiling.memory_snapshot_path={override_value(w)}"], "sections": ["profiling"]}
        for w in words
    ]
    results = mb_parse(cases)
    wrong = [w for w in words if results[w].get("profiling", {}).get("memory_snapshot_path") != w]
    assert wrong == [], [(w, override_value(w), results[w]) for w in wrong[:5]]
    # ours: the OmegaConf dotlist merge that recipes.overrides.parse_overrides runs (its path
    # validation, which refuses '.' as a snapshot file, is not what is checked here)
    conf = OmegaConf.create({"v": ""})
    ours_wrong = []
    for w in words:
        conf.merge_with_dotlist([f"v={override_value(w)}"])
        if conf.v != w:
            ours_wrong.append(w)
    assert ours_wrong == []
    assert sum(map(is_plain_word, words)) > 300  # most are written bare, as Megatron Bridge writes them
