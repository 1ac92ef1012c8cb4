"""Helpers for the launch-side plugin tests (tests/test_plugins_*.py): real NeMo Run, no jobs run.

What a plugin changes is checked where it ends up: the exact command NeMo Run would launch
(LocalExecutor's Popen argv, the sbatch script SlurmExecutor writes, DockerExecutor's container
command), the task config NeMo Run packaged into the job dir, and the experiment files that
``Experiment.from_id`` reads back. Script args are followed through the real shell stages with
the stand-in programs of tests/support.py, and parsed back with the job's own parser
(``recipes.overrides.parse_overrides``).
"""

from __future__ import annotations

import contextlib
import json
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import fiddle as fdl
import nemo_run as run
from nemo_run.core.serialization.zlib_json import ZlibJSONSerializer

from bridge_plugins import NsysPlugin, ProfilingConfig, PyTorchProfilerPlugin
from bridge_plugins.plugins import ProfilingPluginWarning
from bridge_plugins.plugins.nemo_run_compat import dryrun_request, set_tunnel_job_dir
from recipes.config import ConfigContainer
from recipes.overrides import parse_overrides
from tests.support import NSYS_DEFAULTS

AWKWARD = "/data/my run/snap;1.pickle"
NSYS_WRAPPER = "bridge-plugins-nsys"
"""What NsysPlugin runs in place of nsys (the job-side launch wrapper, a console script)."""
LOCAL_NSYS_WRAPPER = str(Path(sys.executable).parent / NSYS_WRAPPER)
"""The same, by path, where the job runs on this machine (LocalExecutor)."""
SLURM_NAME = "profile_%p_%q{SLURM_JOB_ID}_node%q{SLURM_NODEID}_rank%q{SLURM_PROCID}"
FDL_RUNNER = ["-m", "nemo_run.core.runners.fdl_runner", "-n", "job"]


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


def assigned(executor, tmp_path: Path):
    """The executor as NeMo Run hands it to ``setup`` (job dir assigned), without an Experiment."""
    executor.assign("plugtest_1", str(tmp_path / "exp"), task_id="job", task_dir="job")
    if isinstance(executor, run.SlurmExecutor):
        set_tunnel_job_dir(executor, "plugtest_1")
    return executor


def norm(argv: list[str]) -> list[str]:
    """Replace torchrun's random rendezvous id."""
    out = list(argv)
    for i, a in enumerate(out[:-1]):
        if a == "--rdzv-id":
            out[i + 1] = "<ID>"
    return out


def local_argv(job) -> list[str]:
    (replicas,) = dryrun_request(job).role_params.values()
    return norm(replicas[0].args)


def docker_command(job) -> list[str]:
    (container,) = dryrun_request(job).containers
    return container.command


def sbatch(job) -> str:
    return Path(job.executor.experiment_dir, f"{job.executor.job_name}_sbatch.sh").read_text()


def packaged_profiling(job) -> ProfilingConfig:
    """The ProfilingConfig the job will build from the task config NeMo Run packaged."""
    text = Path(job.executor.job_dir, "configs", "job_fn_or_script").read_text()
    cfg = ZlibJSONSerializer().deserialize(text)
    assert isinstance(cfg.config.profiling, run.Config)  # never a dataclass instance
    return fdl.build(cfg.config.profiling)


def packaged_container(job) -> ConfigContainer:
    text = Path(job.executor.job_dir, "configs", "job_fn_or_script").read_text()
    return fdl.build(ZlibJSONSerializer().deserialize(text).config)


def script_tail(argv: list[str]) -> list[str]:
    i = argv.index("recipes.train")
    assert argv[i - 1] == "-m"
    return argv[i + 1 :]


def nsys_segment(out_dir: str) -> str:
    return f"{NSYS_WRAPPER} profile -s none -t nvtx,cuda -o {out_dir}/nsys_profile/{SLURM_NAME} " + " ".join(
        NSYS_DEFAULTS
    )


@contextlib.contextmanager
def no_warnings():
    """Fail on any plugin warning inside the block."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ProfilingPluginWarning)
        yield


def user_nsys_plugin(**kw):
    """The NsysPlugin example of docs/plugins.md, with overrides."""
    args = dict(
        profile_step_start=10,
        profile_step_end=15,
        profile_ranks=[0, 1],
        nsys_trace=["nvtx", "cuda"],
        record_shapes=False,
        nsys_gpu_metrics=False,
    )
    return NsysPlugin(**{**args, **kw})


def awkward_plugin():
    return PyTorchProfilerPlugin(
        profile_step_start=3,
        profile_step_end=6,
        profile_ranks=[0, 1],
        record_memory_history=True,
        memory_snapshot_path=AWKWARD,
        output_dir='/out/it\'s "here" $HOME `x` \\n',
    )


def check_awkward(args: list[str]) -> None:
    cfg = parse_overrides(args)
    assert cfg.profiling.memory_snapshot_path == AWKWARD
    assert cfg.profiling.output_dir == '/out/it\'s "here" $HOME `x` \\n'
    assert cfg.profiling.profile_ranks == [0, 1] and cfg.profiling.use_pytorch_profiler is True


def my_converter(values):
    """A module-level converter (serializable): argparse-style flags."""
    return [f"--prof-{k.replace('_', '-')}={json.dumps(v)}" for k, v in values.items() if k != "output_dir"] + [
        "--note=a b"
    ]


# A container shaped like another project's (Megatron Bridge's): other names, fewer fields.


@dataclass
class ForeignProfilingConfig:
    """Shaped like another project's ProfilingConfig: fewer fields."""

    use_nsys_profiler: bool = False
    use_pytorch_profiler: bool = False
    profile_step_start: int = 10
    profile_step_end: int = 12
    profile_ranks: list[int] = field(default_factory=lambda: [0])
    record_shapes: bool = False


@dataclass
class ForeignFT:
    enable_ft_package: bool = False


@dataclass
class ForeignContainer:
    profiling: ForeignProfilingConfig | None = None
    ft: ForeignFT | None = None


def foreign_pretrain(cfg: ForeignContainer, steps: int = 1) -> None:
    """A training function whose container argument is not called 'config'."""
