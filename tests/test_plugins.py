"""Launch-side tests of the NeMo Run plugins, against real NeMo Run (no mocks), without running jobs.

What a plugin changes is checked where it ends up: the exact command NeMo Run would launch
(LocalExecutor's Popen argv, the sbatch script SlurmExecutor writes, DockerExecutor's container
command), the task config NeMo Run packaged into the job dir, and the experiment files that
``Experiment.from_id`` reads back. Script args are followed through the real shell stages
(bash, and docker-py's shlex split) with stand-in programs that record their argv, and parsed
back with the job's own parser (``recipes.overrides.parse_overrides``).

Each test gets its own NEMORUN_HOME (``set_nemorun_home``: the env var is read only when
nemo_run is imported).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import re
import shlex
import stat
import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

import fiddle as fdl
import nemo_run as run
import pytest
from nemo_run.config import get_nemorun_home
from nemo_run.core.execution.launcher import Launcher
from nemo_run.core.serialization.zlib_json import ZlibJSONSerializer

from bridge_plugins import FaultTolerancePlugin, NsysPlugin, ProfilingConfig, PyTorchProfilerPlugin
from bridge_plugins.plugins import ProfilingPluginWarning
from bridge_plugins.plugins.quoting import QuotingChain
from recipes.config import ConfigContainer
from recipes.overrides import parse_overrides
from recipes.tiny_gpt import tiny_gpt_recipe, tiny_gpt_script
from tests.support import FAKE_NSYS, ROOT, VENV_BIN

# `nemo_run.run` is also a function name in the package namespace; import the module by path.

AWKWARD = "/data/my run/snap;1.pickle"
NSYS_DEFAULTS = ["--force-overwrite=true", "--capture-range=cudaProfilerApi", "--capture-range-end=stop",
                 "--cuda-graph-trace=node", "--cuda-event-trace=false"]
SLURM_NAME = "profile_%p_%q{SLURM_JOB_ID}_node%q{SLURM_NODEID}_rank%q{SLURM_PROCID}"
FDL_RUNNER = ["-m", "nemo_run.core.runners.fdl_runner", "-n", "job"]


# ------------------------------------------------------------------------------------------------
# Fixtures and helpers
# ------------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def home(nemo_home):
    """Every test gets an isolated NeMo Run home (tests/conftest.py)."""
    return nemo_home


def dryrun(task, executor, plugins, name="job"):
    """Add the task with the plugins and let NeMo Run render everything it would launch."""
    with run.Experiment("plugtest", log_level="WARN") as exp:
        exp.add(task, executor=executor, plugins=plugins, name=name)
        exp.dryrun(log=False, delete_exp_dir=False)
    return exp


def slurm(**kw):
    kw.setdefault("nodes", 1)
    kw.setdefault("ntasks_per_node", 2)
    return run.SlurmExecutor(account="acct", partition="part", **kw)


def local_argv(job) -> List[str]:
    (replicas,) = job._dryrun_info.request.role_params.values()
    return norm(replicas[0].args)


def norm(argv: List[str]) -> List[str]:
    """Replace torchrun's random rendezvous id."""
    out = list(argv)
    for i, a in enumerate(out[:-1]):
        if a == "--rdzv-id":
            out[i + 1] = "<ID>"
    return out


def sbatch(job) -> str:
    return Path(job.executor.experiment_dir, f"{job.executor.job_name}_sbatch.sh").read_text()


def srun_line(text: str) -> str:
    """The job's srun command (not the head-node lookup)."""
    (line,) = [ln for ln in text.splitlines() if ln.startswith("srun --output")]
    return line


def packaged_profiling(job) -> ProfilingConfig:
    """The ProfilingConfig the job will build from the task config NeMo Run packaged."""
    text = Path(job.executor.job_dir, "configs", "job_fn_or_script").read_text()
    cfg = ZlibJSONSerializer().deserialize(text)
    assert isinstance(cfg.config.profiling, run.Config)  # never a dataclass instance
    return fdl.build(cfg.config.profiling)


def packaged_container(job) -> ConfigContainer:
    text = Path(job.executor.job_dir, "configs", "job_fn_or_script").read_text()
    return fdl.build(ZlibJSONSerializer().deserialize(text).config)


def script_tail(argv: List[str]) -> List[str]:
    i = argv.index("recipes.train")
    assert argv[i - 1] == "-m"
    return argv[i + 1:]


@contextlib.contextmanager
def no_warnings():
    """Fail on any plugin warning inside the block."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ProfilingPluginWarning)
        yield


def make_fakes(tmp_path: Path) -> Path:
    """A bin dir: `srun` drops its options and execs the command; `nsys` is the stand-in;
    `python`, `torchrun`, `ft_launcher` record their argv to $ARGV_LOG and exit 0."""
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    (bindir / "srun").write_text(
        "#!/bin/bash\n"
        "while [ $# -gt 0 ]; do case \"$1\" in\n"
        "  --output|--error|--chdir|--container-image|--container-mounts|--container-workdir|--container-env) shift 2;;\n"
        "  --*) shift;;\n  *) break;;\nesac; done\nexec \"$@\"\n")
    recorder = (f"#!{sys.executable}\nimport json, os, sys\n"
                "name = os.path.basename(sys.argv[0])\n"
                "open(os.path.join(os.environ['ARGV_LOG'], f'{name}.{os.getpid()}.json'), 'w').write(json.dumps(sys.argv[1:]))\n")
    for name in ("python", "torchrun", "ft_launcher"):
        (bindir / name).write_text(recorder)
    for p in bindir.iterdir():
        p.chmod(p.stat().st_mode | stat.S_IEXEC)
    (bindir / "nsys").symlink_to(FAKE_NSYS)
    (tmp_path / "argv").mkdir()
    return bindir


def run_recorded(argv: List[str], tmp_path: Path, check: bool = True, **env) -> dict:
    """Run argv (a shell) with the fakes first on PATH; return {program: argv} recorded
    (with ``check=False`` a failing run returns what was recorded, plus ``"exit"``)."""
    bindir = make_fakes(tmp_path)
    full_env = {"PATH": f"{bindir}:{VENV_BIN}:/usr/bin:/bin", "ARGV_LOG": str(tmp_path / "argv"),
                "FAKE_NSYS_LOG": str(tmp_path / "argv"),
                "SLURM_JOB_ID": "77", "SLURM_NODEID": "0", "SLURM_PROCID": "0", "SLURM_LOCALID": "0",
                "HOME": os.environ.get("HOME", "/tmp"), **env}
    proc = subprocess.run(argv, env=full_env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 or not check, proc.stdout + proc.stderr
    out = {"exit": [proc.returncode, proc.stdout + proc.stderr]}
    for p in (tmp_path / "argv").iterdir():
        rec = json.loads(p.read_text())
        out[p.name.split(".")[0]] = rec["argv"] if isinstance(rec, dict) else rec  # fake nsys: a record
    return out


def run_sbatch_command(text: str, tmp_path: Path, check: bool = True, **env) -> dict:
    """Run the sbatch script's srun line through bash (srun, nsys and the job replaced by fakes)."""
    exports = dict(re.findall(r"^export (\w+)=(.*)$", text, re.M))
    return run_recorded(["bash", "-c", srun_line(text)], tmp_path, check, **{**exports, **env})


def run_docker_command(command: List[str], tmp_path: Path, check: bool = True) -> dict:
    """Split and run the container command exactly as DockerContainer.run + docker-py would."""
    from docker.utils.utils import split_command

    return run_recorded(split_command(f'bash -c "{" ".join(command)}"'), tmp_path, check)


# ------------------------------------------------------------------------------------------------
# The user's example, LocalExecutor
# ------------------------------------------------------------------------------------------------


def user_nsys_plugin(**kw):
    args = dict(profile_step_start=10, profile_step_end=15, profile_ranks=[0, 1], nsys_trace=["nvtx", "cuda"],
                record_shapes=False, nsys_gpu_metrics=False)
    return NsysPlugin(**{**args, **kw})


def test_local_torchrun_partial_nsys_exact_command_and_config():
    with no_warnings():
        exp = dryrun(tiny_gpt_recipe(), run.LocalExecutor(ntasks_per_node=2, launcher="torchrun"), [user_nsys_plugin()])
    job = exp.jobs[0]
    jd = job.executor.job_dir
    assert local_argv(job) == [
        "nsys", "profile", "-s", "none", "-t", "nvtx,cuda", "-o", f"{jd}/nsys_profile/profile_%p", *NSYS_DEFAULTS,
        "torchrun", "--rdzv-backend", "c10d", "--rdzv-endpoint", "localhost:0", "--rdzv-id", "<ID>",
        "--nnodes", "1", "--nproc-per-node", "2", "--node-rank", "0", "--tee", "3",
        *FDL_RUNNER, f"{jd}/configs/job_fn_or_script", "",
    ]
    assert packaged_profiling(job) == ProfilingConfig(
        use_nsys_profiler=True, profile_step_start=10, profile_step_end=15, profile_ranks=[0, 1], output_dir=jd)
    assert os.path.isdir(f"{jd}/nsys_profile")


def test_local_no_launcher_partial_nsys_exact_command():
    exp = dryrun(tiny_gpt_recipe(), run.LocalExecutor(), [user_nsys_plugin(profile_ranks=None)])
    job = exp.jobs[0]
    jd = job.executor.job_dir
    assert local_argv(job) == [
        "nsys", "profile", "-s", "none", "-t", "nvtx,cuda", "-o", f"{jd}/nsys_profile/profile_%p", *NSYS_DEFAULTS,
        "python", *FDL_RUNNER, f"{jd}/configs/job_fn_or_script", "",
    ]
    assert packaged_profiling(job).profile_ranks == [0]


def test_local_partial_pytorch_leaves_command_alone_and_writes_config():
    plugin = PyTorchProfilerPlugin(profile_step_start=10, profile_step_end=15, profile_ranks=[0],
                                   record_memory_history=True, memory_snapshot_path="memory_snapshot.pickle",
                                   record_shapes=True)
    exp = dryrun(tiny_gpt_recipe(), run.LocalExecutor(ntasks_per_node=2, launcher="torchrun"), [plugin])
    job = exp.jobs[0]
    jd = job.executor.job_dir
    assert local_argv(job)[0] == "torchrun" and "nsys" not in local_argv(job)
    assert packaged_profiling(job) == ProfilingConfig(
        use_pytorch_profiler=True, profile_step_start=10, profile_step_end=15, profile_ranks=[0],
        record_shapes=True, record_memory_history=True, memory_snapshot_path="memory_snapshot.pickle", output_dir=jd)


def test_all_ranks_stays_empty_list():
    exp = dryrun(tiny_gpt_recipe(), run.LocalExecutor(), [PyTorchProfilerPlugin(profile_ranks=[], profile_step_start=3,
                                                                                profile_step_end=6)])
    assert packaged_profiling(exp.jobs[0]).profile_ranks == []


def test_user_output_dir_wins():
    exp = dryrun(tiny_gpt_recipe(), run.LocalExecutor(), [PyTorchProfilerPlugin(output_dir="/shared/prof")])
    assert packaged_profiling(exp.jobs[0]).output_dir == "/shared/prof"


# ------------------------------------------------------------------------------------------------
# SlurmExecutor
# ------------------------------------------------------------------------------------------------


def nsys_segment(out_dir: str) -> str:
    return (f"nsys profile -s none -t nvtx,cuda -o {out_dir}/nsys_profile/{SLURM_NAME} " + " ".join(NSYS_DEFAULTS))


def test_slurm_no_launcher_no_container_partial():
    exp = dryrun(tiny_gpt_recipe(), slurm(), [user_nsys_plugin()])
    job = exp.jobs[0]
    jd = job.executor.job_dir
    text = sbatch(job)
    assert "#SBATCH --ntasks-per-node=2" in text
    line = srun_line(text)
    assert line.endswith(f"--chdir {jd}/code --wait=60 --kill-on-bad-exit=1 {nsys_segment(jd)} "
                         f"python -m nemo_run.core.runners.fdl_runner -n job {jd}/configs/job_fn_or_script ")
    # The packaged config is not rewritten like the sbatch text: it must hold the real path.
    assert packaged_profiling(job).output_dir == jd
    assert os.path.isfile(f"{jd}/nsys_profile/.init")


def test_slurm_torchrun_container_partial():
    exp = dryrun(tiny_gpt_recipe(), slurm(nodes=2, launcher="torchrun", container_image="nvcr.io/x:1"),
                 [user_nsys_plugin()])
    job = exp.jobs[0]
    jd = job.executor.job_dir
    text = sbatch(job)
    assert "#SBATCH --ntasks-per-node=1" in text  # one nsys per node wraps torchrun
    line = srun_line(text)
    assert f"--container-image nvcr.io/x:1 --container-mounts {jd}:/nemo_run --container-workdir /nemo_run/code" in line
    assert line.endswith(
        f"--wait=60 --kill-on-bad-exit=1 {nsys_segment('/nemo_run')} torchrun --rdzv-backend c10d "
        f"--rdzv-endpoint $head_node_ip:29500 --rdzv-id {line.split('--rdzv-id ')[1].split()[0]} --nnodes 2 "
        f"--nproc-per-node 2 --node-rank $SLURM_NODEID --tee 3 -m nemo_run.core.runners.fdl_runner -n job "
        f"/nemo_run/configs/job_fn_or_script ")
    assert packaged_profiling(job).output_dir == "/nemo_run"


def test_slurm_torchrun_no_container_partial():
    exp = dryrun(tiny_gpt_recipe(), slurm(launcher="torchrun"), [user_nsys_plugin()])
    job = exp.jobs[0]
    jd = job.executor.job_dir
    line = srun_line(sbatch(job))
    assert f"{nsys_segment(jd)} torchrun --rdzv-backend c10d" in line
    assert "--nproc-per-node 2" in line and line.endswith(f"-n job {jd}/configs/job_fn_or_script ")
    assert "/nemo_run" not in sbatch(job)
    assert packaged_profiling(job).output_dir == jd


@pytest.mark.parametrize("launcher,nodes,ntasks,ranks,expect", [
    (None, 2, 4, [0, 5], "0,1"),
    (None, 2, 4, [1, 2], "0"),
    (None, 3, 2, [], "0,1,2"),
    ("torchrun", 2, 4, [4], "1"),
])
def test_slurm_gpu_metrics(launcher, nodes, ntasks, ranks, expect, tmp_path):
    exp = dryrun(tiny_gpt_recipe(), slurm(nodes=nodes, ntasks_per_node=ntasks, launcher=launcher),
                 [user_nsys_plugin(profile_ranks=ranks, nsys_gpu_metrics=True)])
    text = sbatch(exp.jobs[0])
    assert f"\nexport GPU_METRICS_NODES={expect}\n" in text
    line = srun_line(text)
    assert ("bash -c 'GPU_METRICS_FLAG=\"\"; if echo \"${GPU_METRICS_NODES}\" | grep -q -w \"${SLURM_NODEID}\"; "
            "then GPU_METRICS_FLAG=\"--gpu-metrics-devices=${SLURM_LOCALID}\"; fi; nsys profile") in line
    assert " --cuda-event-trace=false $GPU_METRICS_FLAG " in line
    # The wrapper really runs: nsys gets the metrics flag on a listed node, not on others.
    first = expect.split(",")[0]
    (tmp_path / "on").mkdir()
    (tmp_path / "off").mkdir()
    got = run_sbatch_command(text, tmp_path / "on", SLURM_NODEID=first)["nsys"]
    assert "--gpu-metrics-devices=0" in got
    got = run_sbatch_command(text, tmp_path / "off", SLURM_NODEID="9")["nsys"]
    assert not any(a.startswith("--gpu-metrics-devices") for a in got)


def test_user_gpu_metrics_nodes_env_is_kept():
    exp = dryrun(tiny_gpt_recipe(), slurm(nodes=2, env_vars={"GPU_METRICS_NODES": "1"}),
                 [user_nsys_plugin(nsys_gpu_metrics=True)])
    assert "\nexport GPU_METRICS_NODES=1\n" in sbatch(exp.jobs[0])


@pytest.mark.parametrize("executor", [
    lambda: run.LocalExecutor(),
    lambda: run.DockerExecutor(container_image="img"),
], ids=["local", "docker"])
def test_gpu_metrics_warns_outside_slurm(executor):
    with pytest.warns(ProfilingPluginWarning, match=r"nsys_gpu_metrics is only supported on SlurmExecutor"):
        exp = dryrun(tiny_gpt_recipe(), executor(), [user_nsys_plugin(nsys_gpu_metrics=True)])
    assert exp.jobs[0].executor.get_launcher().nsys_gpu_metrics is False


def test_nsys_extra_args_merge_replaces_defaults_by_flag_name():
    plugin = user_nsys_plugin(nsys_extra_args=["--capture-range=nvtx", "--cuda-memory-usage=true",
                                               "--capture-range-end", "repeat:2"])
    exp = dryrun(tiny_gpt_recipe(), run.LocalExecutor(), [plugin])
    argv = local_argv(exp.jobs[0])
    assert argv[8:16] == ["--force-overwrite=true", "--capture-range=nvtx", "--capture-range-end", "repeat:2",
                          "--cuda-graph-trace=node", "--cuda-event-trace=false", "--cuda-memory-usage=true", "python"]


# ------------------------------------------------------------------------------------------------
# Containers: Docker (command only), DGX Cloud, Lepton
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("launcher", [None, "torchrun"])
def test_docker_nsys_report_goes_to_container_job_dir(launcher):
    exp = dryrun(tiny_gpt_recipe(), run.DockerExecutor(container_image="img", ntasks_per_node=2, launcher=launcher),
                 [user_nsys_plugin()])
    job = exp.jobs[0]
    (container,) = job._dryrun_info.request.containers
    cmd = norm(container.command)
    assert cmd[:8 + len(NSYS_DEFAULTS)] == ["nsys", "profile", "-s", "none", "-t", "nvtx,cuda", "-o",
                                            "/nemo_run/nsys_profile/profile_%p", *NSYS_DEFAULTS]
    assert cmd[8 + len(NSYS_DEFAULTS)] == ("torchrun" if launcher else "python")
    assert cmd[-2:] == ["/nemo_run/configs/job_fn_or_script", ""]
    assert packaged_profiling(job).output_dir == "/nemo_run"
    assert isinstance(job.executor.get_launcher(), run.Torchrun if launcher else Launcher)


def _assigned(executor, tmp_path):
    executor.assign("plugtest_1", str(tmp_path / "exp"), task_id="job", task_dir="job")
    return executor


@pytest.mark.parametrize("make", [
    lambda: run.DGXCloudExecutor(base_url="http://x", kube_apiserver_url="http://y", client_id="i", client_secret="s",
                                 project_name="p", container_image="img", pvc_nemo_run_dir="/pvc/nemo_run",
                                 pvcs=[{"path": "/pvc", "claimName": "c"}]),
    lambda: run.LeptonExecutor(container_image="img", nemo_run_dir="/lepton"),
], ids=["dgxcloud", "lepton"])
def test_cloud_executors_use_container_job_dir(make, tmp_path):
    executor = _assigned(make(), tmp_path)
    task = tiny_gpt_recipe()
    user_nsys_plugin().setup(task, executor)
    prefix = executor.get_launcher_prefix()
    assert prefix[prefix.index("-o") + 1] == "/nemo_run/nsys_profile/profile_%p"
    assert fdl.build(task.config.profiling).output_dir == "/nemo_run"


# ------------------------------------------------------------------------------------------------
# Recipes that already have a profiling config; other container shapes
# ------------------------------------------------------------------------------------------------


def test_recipe_profiling_other_profiler_switched_off_and_unrelated_fields_survive():
    recipe = tiny_gpt_recipe(profiling=ProfilingConfig(
        use_pytorch_profiler=True, record_memory_history=True, memory_snapshot_path="mine.pickle",
        pytorch_profiler_with_stack=True, memory_history_max_entries=5000))
    with pytest.warns(ProfilingPluginWarning, match=r"had profiling.use_pytorch_profiler=True; switched off"):
        exp = dryrun(recipe, run.LocalExecutor(), [user_nsys_plugin()])
    got = packaged_profiling(exp.jobs[0])
    assert got == ProfilingConfig(
        use_nsys_profiler=True, use_pytorch_profiler=False, profile_step_start=10, profile_step_end=15,
        profile_ranks=[0, 1], record_memory_history=True, memory_snapshot_path="mine.pickle",
        pytorch_profiler_with_stack=True, memory_history_max_entries=5000, output_dir=exp.jobs[0].executor.job_dir)


def test_recipe_output_dir_is_kept_over_job_dir_default():
    recipe = tiny_gpt_recipe(profiling=ProfilingConfig(output_dir="/lustre/profiles"))
    exp = dryrun(recipe, run.LocalExecutor(), [PyTorchProfilerPlugin()])
    assert packaged_profiling(exp.jobs[0]).output_dir == "/lustre/profiles"


def test_container_config_without_profiling_set():
    """run.Config(ConfigContainer) with no profiling argument: reading it would raise (default_factory)."""
    from recipes.train import pretrain

    task = run.Partial(pretrain, config=run.Config(ConfigContainer))
    exp = dryrun(task, run.LocalExecutor(), [PyTorchProfilerPlugin(profile_step_start=3, profile_step_end=6)])
    assert packaged_profiling(exp.jobs[0]) == ProfilingConfig(
        use_pytorch_profiler=True, profile_step_start=3, profile_step_end=6, output_dir=exp.jobs[0].executor.job_dir)


@dataclass
class ForeignProfilingConfig:
    """Shaped like another project's ProfilingConfig: fewer fields."""

    use_nsys_profiler: bool = False
    use_pytorch_profiler: bool = False
    profile_step_start: int = 10
    profile_step_end: int = 12
    profile_ranks: List[int] = field(default_factory=lambda: [0])
    record_shapes: bool = False


@dataclass
class ForeignFT:
    enable_ft_package: bool = False


@dataclass
class ForeignContainer:
    profiling: Optional[ForeignProfilingConfig] = None
    ft: Optional[ForeignFT] = None


def foreign_pretrain(cfg: ForeignContainer, steps: int = 1) -> None:
    """A training function whose container argument is not called 'config'."""


def test_megatron_bridge_shaped_container_found_by_field():
    task = run.Partial(foreign_pretrain, cfg=run.Config(ForeignContainer), steps=3)
    executor = _assigned(run.LocalExecutor(), Path(get_nemorun_home()))
    with pytest.warns(ProfilingPluginWarning, match=r"ForeignProfilingConfig has no field\(s\) \['nvtx_per_op', 'output_dir'\]"):
        user_nsys_plugin().setup(task, executor)
    FaultTolerancePlugin().setup(task, executor)
    assert fdl.build(task.cfg) == ForeignContainer(
        profiling=ForeignProfilingConfig(use_nsys_profiler=False, profile_step_start=10, profile_step_end=15,
                                         profile_ranks=[0, 1]),
        ft=ForeignFT(enable_ft_package=True))


def test_partial_without_container_is_rejected_without_changes():
    task = run.Partial(foreign_pretrain, cfg=None)
    executor = _assigned(run.LocalExecutor(launcher="torchrun"), Path(get_nemorun_home()))
    before = executor.to_config()
    with pytest.raises(TypeError, match=r"NsysPlugin: run.Partial\(foreign_pretrain\) has no configured argument "
                                        r"with a 'profiling' field"):
        user_nsys_plugin().setup(task, executor)
    assert executor.to_config() == before and executor.launcher == "torchrun"


def test_invalid_recipe_combination_fails_before_any_change():
    from recipes.train import pretrain

    task = run.Partial(pretrain, config=run.Config(
        ConfigContainer, profiling=run.Config(ProfilingConfig, memory_snapshot_path="")))
    executor = _assigned(run.LocalExecutor(), Path(get_nemorun_home()))
    with pytest.raises(ValueError, match=r"NsysPlugin: the recipe's profiling config combined with the plugin is "
                                         r"invalid: ProfilingConfig.memory_snapshot_path is empty"):
        user_nsys_plugin().setup(task, executor)
    assert executor.launcher is None
    assert task.config.profiling.__arguments__ == {"memory_snapshot_path": ""}


# ------------------------------------------------------------------------------------------------
# run.Script overrides
# ------------------------------------------------------------------------------------------------


EXPECTED_NSYS_OVERRIDES = [
    "profiling.use_nsys_profiler=true", "profiling.use_pytorch_profiler=false", "profiling.profile_step_start=10",
    "profiling.profile_step_end=15", "profiling.profile_ranks=[0,1]", "profiling.record_shapes=false",
    "profiling.nvtx_per_op=false",
]


def test_script_local_overrides_exact_and_parse_back():
    exp = dryrun(tiny_gpt_script("train.train_iters=8"), run.LocalExecutor(), [user_nsys_plugin()])
    job = exp.jobs[0]
    jd = job.executor.job_dir
    tail = script_tail(local_argv(job))
    assert tail == ["train.train_iters=8", *EXPECTED_NSYS_OVERRIDES, f'profiling.output_dir="{jd}"', ""]
    cfg = parse_overrides(tail)
    assert cfg.train.train_iters == 8
    assert cfg.profiling == ProfilingConfig(use_nsys_profiler=True, profile_step_start=10, profile_step_end=15,
                                            profile_ranks=[0, 1], output_dir=jd)


def awkward_plugin():
    return PyTorchProfilerPlugin(profile_step_start=3, profile_step_end=6, profile_ranks=[0, 1],
                                 record_memory_history=True, memory_snapshot_path=AWKWARD,
                                 output_dir="/out/it's \"here\" $HOME `x` \\n")


def check_awkward(args: List[str]) -> None:
    cfg = parse_overrides(args)
    assert cfg.profiling.memory_snapshot_path == AWKWARD
    assert cfg.profiling.output_dir == "/out/it's \"here\" $HOME `x` \\n"
    assert cfg.profiling.profile_ranks == [0, 1] and cfg.profiling.use_pytorch_profiler is True


def test_script_awkward_values_local_argv():
    exp = dryrun(tiny_gpt_script(), run.LocalExecutor(), [awkward_plugin()])
    check_awkward(script_tail(local_argv(exp.jobs[0])))


@pytest.mark.parametrize("launcher", [None, "torchrun"])
def test_script_awkward_values_through_slurm_sbatch(launcher, tmp_path):
    exp = dryrun(tiny_gpt_script(), slurm(launcher=launcher), [awkward_plugin()])
    text = sbatch(exp.jobs[0])
    # What the job receives once bash has parsed the sbatch script:
    recorded = run_sbatch_command(text, tmp_path)
    check_awkward(script_tail(recorded["torchrun" if launcher else "python"]))
    # and the same by shlex, without executing anything.
    check_awkward(script_tail(shlex.split(srun_line(text).replace("$$", "$"))))


@pytest.mark.parametrize("launcher", [None, "torchrun"])
def test_script_awkward_path_through_slurm_nsys_gpu_metrics_wrapper(launcher, tmp_path):
    """With GPU metrics NeMo Run wraps the command in bash -c '...': one more shell level."""
    plugin = user_nsys_plugin(nsys_gpu_metrics=True, output_dir=AWKWARD + " $x \"q\"")
    exp = dryrun(tiny_gpt_script("train.train_iters=8"), slurm(launcher=launcher), [plugin])
    recorded = run_sbatch_command(sbatch(exp.jobs[0]), tmp_path)
    assert "--gpu-metrics-devices=0" in recorded["nsys"]
    cfg = parse_overrides(script_tail(recorded["torchrun" if launcher else "python"]))
    assert cfg.profiling.output_dir == AWKWARD + " $x \"q\""
    assert cfg.profiling.profile_ranks == [0, 1] and cfg.train.train_iters == 8


@pytest.mark.parametrize("launcher", [None, "torchrun"])
def test_script_awkward_path_through_docker_command(launcher, tmp_path):
    plugin = PyTorchProfilerPlugin(memory_snapshot_path=AWKWARD, profile_ranks=[0, 1], output_dir='/o/"q" \\ $HOME')
    exp = dryrun(tiny_gpt_script(), run.DockerExecutor(container_image="img", launcher=launcher), [plugin])
    (container,) = exp.jobs[0]._dryrun_info.request.containers
    recorded = run_docker_command(container.command, tmp_path)
    cfg = parse_overrides(script_tail(recorded["torchrun" if launcher else "python"]))
    assert cfg.profiling.memory_snapshot_path == AWKWARD and cfg.profiling.output_dir == '/o/"q" \\ $HOME'
    assert cfg.profiling.output_dir != "/nemo_run"


def test_script_local_torchrun_args_arrive_shell_quoted():
    """NeMo Run's torchrun component shlex-quotes script args and LocalExecutor runs them without a
    shell: any arg that needs quoting reaches the program wrapped in quotes. The plugin cannot
    undo that (see the e2e test); this pins the behaviour so a NeMo Run change is noticed."""
    exp = dryrun(tiny_gpt_script(), run.LocalExecutor(ntasks_per_node=2, launcher="torchrun"), [user_nsys_plugin()])
    tail = script_tail(local_argv(exp.jobs[0]))
    assert "'profiling.profile_ranks=[0,1]'" in tail and "profiling.use_nsys_profiler=true" in tail


def my_converter(values):
    """A module-level converter (serializable): argparse-style flags."""
    return [f"--prof-{k.replace('_', '-')}={json.dumps(v)}" for k, v in values.items() if k != "output_dir"] + \
           ["--note=a b"]


def test_custom_converter_replaces_default_and_is_encoded_per_executor():
    plugin = user_nsys_plugin(script_args_converter_fn=my_converter)
    exp = dryrun(tiny_gpt_script("x=1"), run.LocalExecutor(), [plugin])
    assert script_tail(local_argv(exp.jobs[0])) == [
        "x=1", "--prof-use-nsys-profiler=true", "--prof-use-pytorch-profiler=false", "--prof-profile-step-start=10",
        "--prof-profile-step-end=15", "--prof-profile-ranks=[0, 1]", "--prof-record-shapes=false",
        "--prof-nvtx-per-op=false", "--note=a b", ""]
    exp = dryrun(tiny_gpt_script("x=1"), slurm(), [plugin])
    line = srun_line(sbatch(exp.jobs[0]))
    assert line.endswith("python -m recipes.train x=1 --prof-use-nsys-profiler=true --prof-use-pytorch-profiler=false "
                         "--prof-profile-step-start=10 --prof-profile-step-end=15 '--prof-profile-ranks=[0, 1]' "
                         "--prof-record-shapes=false --prof-nvtx-per-op=false '--note=a b' ")


def test_script_existing_other_profiler_is_switched_off():
    task = tiny_gpt_script("profiling.use_pytorch_profiler=true", "profiling.record_memory_history=true")
    with pytest.warns(ProfilingPluginWarning, match="had profiling.use_pytorch_profiler=True"):
        exp = dryrun(task, run.LocalExecutor(), [user_nsys_plugin()])
    cfg = parse_overrides(script_tail(local_argv(exp.jobs[0])))
    assert cfg.profiling.use_nsys_profiler and not cfg.profiling.use_pytorch_profiler
    assert cfg.profiling.record_memory_history is True


# ------------------------------------------------------------------------------------------------
# FaultTolerancePlugin with NsysPlugin, both orders
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["nsys_first", "ft_first"])
@pytest.mark.parametrize("launcher", [None, "torchrun"])
@pytest.mark.parametrize("kind", ["partial", "script"])
def test_ft_and_nsys_either_order_on_slurm(order, launcher, kind, tmp_path):
    # gpu metrics make NsysPlugin call get_launcher(): the Slurm launcher-setup trap.
    nsys = user_nsys_plugin(nsys_gpu_metrics=True, output_dir=AWKWARD)
    ft = FaultTolerancePlugin(num_in_job_restarts=3, num_job_retries_on_failure=2)
    plugins = [nsys, ft] if order == "nsys_first" else [ft, nsys]
    task = tiny_gpt_recipe() if kind == "partial" else tiny_gpt_script("train.train_iters=8")
    with pytest.warns(ProfilingPluginWarning, match="nsys profiling is disabled"):
        exp = dryrun(task, slurm(nodes=2, launcher=launcher), plugins)
    job = exp.jobs[0]
    text = sbatch(job)
    assert "nsys profile" not in text and "nsys_profile/" not in text and "GPU_METRICS_FLAG" not in text
    line = srun_line(text)
    assert " ft_launcher --ft-initial_rank_heartbeat_timeout 1800 --ft-rank_heartbeat_timeout 300 --max-restarts 3 " in line
    assert "\nexport TORCHX_MAX_RETRIES=2\n" in text and "#SBATCH --ntasks-per-node=1" in text
    assert "--nproc-per-node 2" in line
    assert job.executor.get_launcher().cfg_path.endswith("job_ft_cfg.yml")
    if kind == "partial":
        cfg = packaged_container(job)
    else:
        recorded = run_sbatch_command(text, tmp_path)
        cfg = parse_overrides(script_tail(recorded["ft_launcher"]))
    assert cfg.ft.enable_ft_package is True
    assert cfg.profiling.use_nsys_profiler is False
    if order == "nsys_first":  # the rest of the nsys plugin's settings arrive intact
        assert cfg.profiling.output_dir == AWKWARD and cfg.profiling.profile_ranks == [0, 1]


def test_ft_resets_slurm_launcher_setup(tmp_path):
    executor = _assigned(slurm(launcher="torchrun"), tmp_path)
    executor.tunnel._set_job_dir("plugtest_1")
    executor.get_launcher()  # someone configured the Torchrun launcher already
    FaultTolerancePlugin().setup(tiny_gpt_recipe(), executor)
    launcher = executor.get_launcher()
    assert isinstance(launcher, run.FaultTolerance) and launcher.cfg_path and launcher.job_results_file
    assert executor.ntasks_per_node == 1 and executor.torchrun_nproc_per_node == 2


def test_ft_keeps_torchrun_rendezvous_and_sets_retries(tmp_path):
    executor = _assigned(run.LocalExecutor(launcher=run.Torchrun(rdzv_port=12345, rdzv_backend="static")), tmp_path)
    FaultTolerancePlugin(num_in_job_restarts=1, num_job_retries_on_failure=4, initial_rank_heartbeat_timeout=None,
                         rank_heartbeat_timeout=60.5).setup(tiny_gpt_recipe(), executor)
    launcher = executor.get_launcher()
    assert (launcher.rdzv_port, launcher.rdzv_backend, launcher.max_restarts) == (12345, "static", 1)
    assert (launcher.initial_rank_heartbeat_timeout, launcher.rank_heartbeat_timeout) == (None, 60.5)
    assert executor.retries == 4 and launcher.nsys_profile is False


def test_ft_without_ft_section_warns(tmp_path):
    @dataclass
    class NoFT:
        profiling: Optional[ProfilingConfig] = None

    task = run.Partial(foreign_pretrain, cfg=run.Config(NoFT))
    with pytest.warns(ProfilingPluginWarning, match="NoFT has no 'ft' section"):
        FaultTolerancePlugin().setup(task, _assigned(run.LocalExecutor(), tmp_path))


# ------------------------------------------------------------------------------------------------
# Validation, task types, idempotency, serialization
# ------------------------------------------------------------------------------------------------


def _partial_fn(values):  # a functools.partial target
    return []


@pytest.mark.parametrize("cls,kwargs,exc,message", [
    (NsysPlugin, dict(profile_step_start=-1), ValueError, "NsysPlugin.profile_step_start=-1 is negative"),
    (NsysPlugin, dict(profile_step_start=10, profile_step_end=10), ValueError,
     "NsysPlugin.profile_step_end=10 must be greater than profile_step_start=10"),
    (NsysPlugin, dict(profile_step_start="3"), TypeError, "NsysPlugin.profile_step_start must be an int, got '3'"),
    (NsysPlugin, dict(profile_ranks=[0, 0]), ValueError, "NsysPlugin.profile_ranks=[0, 0] repeats rank(s) [0]"),
    (NsysPlugin, dict(profile_ranks=[-1]), ValueError, "holds negative rank -1"),
    (NsysPlugin, dict(profile_ranks="0"), TypeError, "NsysPlugin.profile_ranks must be a list of global ranks, got '0'"),
    (NsysPlugin, dict(profile_ranks=[0.5]), TypeError, "holds 0.5 (float)"),
    (NsysPlugin, dict(record_shapes="yes"), TypeError, "NsysPlugin.record_shapes must be a bool, got 'yes'"),
    (NsysPlugin, dict(output_dir=""), ValueError, "NsysPlugin.output_dir is empty"),
    (NsysPlugin, dict(output_dir=5), TypeError, "NsysPlugin.output_dir must be a str path or None, got 5"),
    (NsysPlugin, dict(nsys_trace=[]), ValueError, "NsysPlugin.nsys_trace=[] must be a non-empty list"),
    (NsysPlugin, dict(nsys_trace="cuda"), ValueError, "NsysPlugin.nsys_trace='cuda'"),
    (NsysPlugin, dict(nsys_trace=["cuda,nvtx"]), ValueError, "NsysPlugin.nsys_trace=['cuda,nvtx']"),
    (NsysPlugin, dict(nsys_extra_args="--stats=true"), TypeError, "NsysPlugin.nsys_extra_args must be a list of str"),
    (NsysPlugin, dict(nsys_extra_args=["stats"]), ValueError, "'stats' is not an nsys option"),
    (NsysPlugin, dict(nsys_extra_args=["-o", "x"]), ValueError, "sets '-o': placement is set per executor"),
    (NsysPlugin, dict(nsys_extra_args=["--trace=cuda"]), ValueError, "sets '--trace': use nsys_trace"),
    (NsysPlugin, dict(nsys_gpu_metrics="yes"), TypeError, "NsysPlugin.nsys_gpu_metrics must be a bool, got 'yes'"),
    (NsysPlugin, dict(script_args_converter_fn=lambda v: []), TypeError, "define it with 'def' at module level"),
    (NsysPlugin, dict(script_args_converter_fn=functools.partial(_partial_fn)), TypeError, "at module level"),
    (NsysPlugin, dict(script_args_converter_fn=5), TypeError, "script_args_converter_fn must be a function, got 5"),
    (PyTorchProfilerPlugin, dict(memory_snapshot_path=""), ValueError, "PyTorchProfilerPlugin.memory_snapshot_path is empty"),
    (PyTorchProfilerPlugin, dict(memory_snapshot_path="snaps/"), ValueError, "names a directory"),
    (PyTorchProfilerPlugin, dict(memory_history_max_entries=0), ValueError,
     "PyTorchProfilerPlugin.memory_history_max_entries=0 must be positive"),
    (PyTorchProfilerPlugin, dict(with_stack=1), TypeError, "PyTorchProfilerPlugin.with_stack must be a bool, got 1"),
    (PyTorchProfilerPlugin, dict(record_memory_history=None), TypeError, "PyTorchProfilerPlugin.record_memory_history must be a bool"),
    (FaultTolerancePlugin, dict(num_in_job_restarts=-1), ValueError, "FaultTolerancePlugin.num_in_job_restarts=-1 is negative"),
    (FaultTolerancePlugin, dict(num_job_retries_on_failure="2"), TypeError,
     "FaultTolerancePlugin.num_job_retries_on_failure must be an int, got '2'"),
    (FaultTolerancePlugin, dict(rank_heartbeat_timeout=0), ValueError, "FaultTolerancePlugin.rank_heartbeat_timeout=0 must be positive"),
    (FaultTolerancePlugin, dict(initial_rank_heartbeat_timeout=True), TypeError,
     "FaultTolerancePlugin.initial_rank_heartbeat_timeout must be seconds"),
])
def test_validation_at_construction(cls, kwargs, exc, message):
    with pytest.raises(exc) as info:
        cls(**kwargs)
    assert message in str(info.value)
    assert type(info.value) is exc


def test_plugins_are_keyword_only():
    with pytest.raises(TypeError):
        NsysPlugin(10, 15)  # type: ignore[misc]


def plain_function(x=1):
    return x


@pytest.mark.parametrize("plugin", [user_nsys_plugin, PyTorchProfilerPlugin, FaultTolerancePlugin])
@pytest.mark.parametrize("task,what", [
    (plain_function, "function"),
    (run.Config(ConfigContainer), "nemo_run.config.Config"),
    (run.Script(inline="echo hi"), "inline"),
])
def test_unsupported_task_types(plugin, task, what, tmp_path):
    p = plugin()
    executor = _assigned(run.LocalExecutor(launcher="torchrun"), tmp_path)
    with pytest.raises(TypeError) as info:
        p.setup(task, executor)
    msg = str(info.value)
    assert msg.startswith(type(p).__name__)
    if what == "inline":
        assert "inline run.Script" in msg
    else:
        assert "supports run.Partial and run.Script tasks" in msg and what in msg
    assert executor.launcher == "torchrun"


@pytest.mark.parametrize("make_executor", [
    lambda: run.LocalExecutor(ntasks_per_node=2, launcher="torchrun"),
    lambda: slurm(nodes=2, launcher="torchrun"),
    lambda: slurm(nodes=2),
    lambda: run.DockerExecutor(container_image="img"),
], ids=["local", "slurm-torchrun", "slurm", "docker"])
@pytest.mark.parametrize("make_task", [tiny_gpt_recipe, lambda: tiny_gpt_script("train.train_iters=3")],
                         ids=["partial", "script"])
@pytest.mark.parametrize("plugins", [
    lambda: [user_nsys_plugin(nsys_gpu_metrics=True, nsys_extra_args=["--capture-range=nvtx"], output_dir=AWKWARD)],
    lambda: [awkward_plugin()],
    lambda: [user_nsys_plugin(), FaultTolerancePlugin()],
], ids=["nsys", "pytorch", "nsys+ft"])
def test_setup_is_idempotent(make_executor, make_task, plugins, tmp_path):
    executor = _assigned(make_executor(), tmp_path)
    if isinstance(executor, run.SlurmExecutor):
        executor.tunnel._set_job_dir("plugtest_1")
    task = make_task()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ProfilingPluginWarning)
        for p in plugins():
            p.setup(task, executor)
        once = (copy_cfg(task), executor.to_config())
        for p in plugins():
            p.setup(task, executor)
    assert (copy_cfg(task), executor.to_config()) == once


def copy_cfg(task):
    return task.args if isinstance(task, run.Script) else fdl.build(task.config)


def test_job_group_shares_executor_without_duplicates():
    """Job groups run setup once per task on the same executor."""
    with run.Experiment("plugtest", log_level="WARN") as exp:
        exp.add([tiny_gpt_recipe(), tiny_gpt_script("train.train_iters=3")], executor=slurm(),
                plugins=[user_nsys_plugin(nsys_extra_args=["--capture-range=nvtx"])], name="grp")
        exp.dryrun(log=False, delete_exp_dir=False)
    text = Path(exp._exp_dir, "grp_sbatch.sh").read_text()
    lines = [ln for ln in text.splitlines() if ln.startswith("srun --output")]
    assert len(lines) == 2
    for ln in lines:
        assert ln.count("nsys profile") == 1 and ln.count("--capture-range=") == 1
    assert lines[1].count("profiling.use_nsys_profiler=true") == 1


@pytest.mark.parametrize("make_task", [tiny_gpt_recipe, lambda: tiny_gpt_script("train.train_iters=3")])
def test_experiment_from_id_after_dryrun(make_task):
    plugins = [user_nsys_plugin(script_args_converter_fn=my_converter, nsys_extra_args=["--stats=true"]),
               FaultTolerancePlugin(num_in_job_restarts=5)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ProfilingPluginWarning)
        exp = dryrun(make_task(), slurm(), plugins)
    back = run.Experiment.from_id(exp._id)
    (job,) = back.jobs
    assert [init_fields(p) for p in job.plugins] == [init_fields(p) for p in plugins]
    assert job.plugins[0].script_args_converter_fn is my_converter
    assert isinstance(job.executor.get_launcher(), run.FaultTolerance)


def init_fields(obj):
    return type(obj), {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}


def test_job_side_never_imports_nemo_run_and_plugins_never_import_runtime():
    code = ("import sys; import bridge_plugins.runtime, recipes.train; "
            "assert 'nemo_run' not in sys.modules, 'runtime imported nemo_run'; "
            "import bridge_plugins.plugins as p; "
            "assert p.NsysPlugin and 'bridge_plugins.runtime' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=120)
    code = ("import sys; import bridge_plugins.plugins; "
            "assert 'bridge_plugins.runtime' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=120)


def test_top_level_lazy_names():
    import bridge_plugins
    from bridge_plugins.plugins import nsys, pytorch, fault_tolerance

    assert bridge_plugins.NsysPlugin is nsys.NsysPlugin
    assert bridge_plugins.PyTorchProfilerPlugin is pytorch.PyTorchProfilerPlugin
    assert bridge_plugins.FaultTolerancePlugin is fault_tolerance.FaultTolerancePlugin
    assert issubclass(NsysPlugin, run.Plugin) and dataclasses.is_dataclass(NsysPlugin)


# ------------------------------------------------------------------------------------------------
# Arg encoding, unit level
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", [AWKWARD, "a'b", 'x="y z"', "$$HOME", "\\", "", "plain", "[0,1]", "é `x`", "${img_root}"])
@pytest.mark.parametrize("layers", [(), ("shell",), ("shell", "macros"), ("shell", "single_quoted", "macros"),
                                    ("shell", "double_quoted"), ("bash_double_quoted", "bash_double_quoted", "macros")])
def test_encode_decode_roundtrip(raw, layers):
    chain = QuotingChain(layers)
    if "bash_double_quoted" in layers and "'" in raw:
        pytest.skip("single quotes are refused in that chain")
    assert chain.decode(chain.encode(raw)) == raw


def test_fake_nsys_parses_nemo_run_prefix(tmp_path):
    (tmp_path / "rep").mkdir()
    log = tmp_path / "log"
    log.mkdir()
    argv = [str(FAKE_NSYS), "profile", "-s", "none", "-t", "nvtx,cuda", "-o", f"{tmp_path}/rep/p_%q{{NODE}}_%%",
            *NSYS_DEFAULTS, sys.executable, "-c", "import sys; print(sys.argv[1:])", "-x", ""]
    proc = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "NODE": "3", "FAKE_NSYS_LOG": str(log)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['-x', '']"
    rec = json.loads((tmp_path / "rep" / "p_3_%.nsys-rep").read_text())
    assert rec["command"][0] == sys.executable and rec["options"][-1] == "--cuda-event-trace=false"
    assert len(list(log.iterdir())) == 1


# ------------------------------------------------------------------------------------------------
# nsys options through the shell (issue 7.4): quoted per executor, never executed
# ------------------------------------------------------------------------------------------------

HOSTILE_NSYS_ARG = "--env-var=X=$(touch {p}) `touch {p}` ${{HOME}} $$ 'q' \"d\" ;touch {p}"


@pytest.mark.parametrize("gpu_metrics", [False, True], ids=["plain", "gpu-metrics-wrapper"])
@pytest.mark.parametrize("launcher", [None, "torchrun"])
def test_slurm_nsys_extra_args_are_quoted_not_executed(launcher, gpu_metrics, tmp_path):
    pwned = tmp_path / "pwned"
    hostile = HOSTILE_NSYS_ARG.format(p=pwned)
    plugin = user_nsys_plugin(nsys_extra_args=[hostile], nsys_gpu_metrics=gpu_metrics)
    exp = dryrun(tiny_gpt_recipe(), slurm(launcher=launcher), [plugin])
    text = sbatch(exp.jobs[0])
    recorded = run_sbatch_command(text, tmp_path, check=False)
    assert not pwned.exists(), "the nsys option ran a command on the node"
    assert recorded["exit"][0] == 0, recorded["exit"][1]
    assert recorded["nsys"][recorded["nsys"].index("--cuda-event-trace=false") + 1] == hostile
    quoted = shlex.quote(hostile)
    expected = quoted.replace("'", "'\\''") if gpu_metrics else quoted
    assert f" --cuda-event-trace=false {expected} " in srun_line(text)


def test_docker_nsys_extra_args_are_quoted_not_executed(tmp_path):
    pwned = tmp_path / "pwned"
    hostile = HOSTILE_NSYS_ARG.format(p=pwned)
    exp = dryrun(tiny_gpt_recipe(), run.DockerExecutor(container_image="img"), [user_nsys_plugin(nsys_extra_args=[hostile])])
    (container,) = exp.jobs[0]._dryrun_info.request.containers
    mount = tmp_path / "mount"  # what the container sees at /nemo_run
    (mount / "nsys_profile").mkdir(parents=True)
    command = [a.replace("/nemo_run/", f"{mount}/") for a in container.command]
    recorded = run_docker_command(command, tmp_path, check=False)
    assert not pwned.exists(), "the nsys option ran a command in the container"
    assert recorded["exit"][0] == 0, recorded["exit"][1]
    assert recorded["nsys"][recorded["nsys"].index("--cuda-event-trace=false") + 1] == hostile


def test_local_nsys_extra_args_arrive_byte_for_byte():
    """LocalExecutor: no shell, but torchx's macro substitution ($$ -> $, ${img_root})."""
    hostile = "--env-var=X=$$ ${img_root} ${replica_id} $(x)"
    exp = dryrun(tiny_gpt_recipe(), run.LocalExecutor(), [user_nsys_plugin(nsys_extra_args=[hostile])])
    argv = local_argv(exp.jobs[0])
    assert argv[argv.index("--cuda-event-trace=false") + 1] == hostile


@pytest.mark.parametrize("kwargs,bad", [
    (dict(nsys_extra_args=["--env-var=A=1\nrm -rf /"]), "'--env-var=A=1\\nrm -rf /'"),
    (dict(nsys_extra_args=["--x=a\rb"]), "'--x=a\\rb'"),
    (dict(nsys_trace=["cuda`touch x`"]), "'cuda`touch x`'"),
    (dict(nsys_trace=["cuda$(id)"]), "'cuda$(id)'"),
    (dict(nsys_trace=["nvtx\ncuda"]), "'nvtx\\ncuda'"),
])
def test_nsys_values_that_cannot_be_carried_are_refused(kwargs, bad):
    with pytest.raises(ValueError) as info:
        NsysPlugin(**kwargs)
    assert bad in str(info.value) and str(info.value).startswith("NsysPlugin.nsys_")


# ------------------------------------------------------------------------------------------------
# Script override values arrive byte for byte (issue 7.5): OmegaConf interpolation, NeMo Run macros
# ------------------------------------------------------------------------------------------------

MACRO_AND_INTERPOLATION = "/o/$$ ${replica_id} ${img_root} ${HOME} ${train.seed} \\${x} $HOME"


@pytest.mark.parametrize("make_executor", [
    lambda: run.LocalExecutor(),
    lambda: run.LocalExecutor(ntasks_per_node=2, launcher="torchrun"),
], ids=["local", "local-torchrun"])
@pytest.mark.parametrize("value", ["/o/$$x $$", MACRO_AND_INTERPOLATION], ids=["macros-only", "both"])
def test_script_local_values_survive_macros_and_interpolation(make_executor, value):
    plugin = PyTorchProfilerPlugin(output_dir=value, memory_snapshot_path="s$$.pickle")
    exp = dryrun(tiny_gpt_script(), make_executor(), [plugin])
    cfg = parse_overrides(script_tail(local_argv(exp.jobs[0])))
    assert cfg.profiling.output_dir == value
    assert cfg.profiling.memory_snapshot_path == "s$$.pickle"


@pytest.mark.parametrize("launcher", [None, "torchrun"])
def test_script_slurm_values_survive_macros_and_interpolation(launcher, tmp_path):
    exp = dryrun(tiny_gpt_script(), slurm(launcher=launcher), [PyTorchProfilerPlugin(output_dir=MACRO_AND_INTERPOLATION)])
    recorded = run_sbatch_command(sbatch(exp.jobs[0]), tmp_path)
    cfg = parse_overrides(script_tail(recorded["torchrun" if launcher else "python"]))
    assert cfg.profiling.output_dir == MACRO_AND_INTERPOLATION


@pytest.mark.parametrize("text", ["${HOME}", "a\\${x}", "\\", "x\\\\${y}", "${a}${b}", "}${", "${x", "\\${", "$$", "plain"])
def test_override_value_is_read_back_verbatim_by_the_job_parser(text):
    from bridge_plugins.override_values import override_value

    cfg = parse_overrides([f"profiling.output_dir={override_value(text)}", f"profiling.memory_snapshot_path={override_value(text + 'f')}"])
    assert (cfg.profiling.output_dir, cfg.profiling.memory_snapshot_path) == (text, text + "f")
