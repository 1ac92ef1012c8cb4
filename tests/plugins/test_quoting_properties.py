"""Property: any string a plugin is given reaches the job's parser byte for byte, through every
executor's real quoting chain (issue 19.3): bash running the sbatch line (with and without
torchrun, and inside NeMo Run's ``bash -c '...'`` for nsys GPU metrics), docker-py's split plus
bash, and LocalExecutor's no-shell path (torchx's Popen argv). A string a chain cannot carry must
be refused at setup with a ValueError naming it, never altered."""

from __future__ import annotations

import shlex
import string
import tempfile
from pathlib import Path

import nemo_run as run
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bridge_plugins import NsysPlugin, PyTorchProfilerPlugin
from recipes.overrides import parse_overrides
from recipes.tiny_gpt import tiny_gpt_script
from tests.launch_support import docker_command, dryrun, local_argv, sbatch, script_tail, slurm
from tests.support import run_docker_command, run_sbatch_command

# real bash and real NeMo Run executors per example, seconds each (tests/plugins/test_quoting_chain.py is the quick lane's)
pytestmark = [pytest.mark.usefixtures("nemo_home"), pytest.mark.slow]

SHELL_MEAN = "'\"\\$`!*?[]{}()<>|&;#~ \t\n%=:,"  # what a shell, a macro or YAML could change
VALUES = st.text(
    alphabet=st.sampled_from(SHELL_MEAN + string.ascii_letters[:6] + "/.-_" + "é€"), min_size=1, max_size=24
).filter(lambda s: s.strip())  # an empty or blank output_dir is refused at construction

EXAMPLES = settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


def _received(executor_kind: str, value: str, tmp: Path) -> list[str] | None:
    """The script args the job receives when a plugin carries ``value`` as output_dir (and inside
    the snapshot path); None when setup refused it with a ValueError that names it."""
    if executor_kind.startswith("slurm-gpu-metrics"):
        plugin = NsysPlugin(output_dir=value, nsys_gpu_metrics=True)
    else:
        plugin = PyTorchProfilerPlugin(output_dir=value, memory_snapshot_path=f"x{value}y.pickle")
    launcher = "torchrun" if executor_kind.endswith("torchrun") else None
    executor = {
        "local": lambda: run.LocalExecutor(),
        "local-torchrun": lambda: run.LocalExecutor(ntasks_per_node=1, launcher="torchrun"),
        "slurm": lambda: slurm(launcher=launcher),
        "slurm-torchrun": lambda: slurm(launcher=launcher),
        "slurm-gpu-metrics": lambda: slurm(launcher=launcher),
        "slurm-gpu-metrics-torchrun": lambda: slurm(launcher=launcher),
        "docker": lambda: run.DockerExecutor(container_image="img", launcher=launcher),
        "docker-torchrun": lambda: run.DockerExecutor(container_image="img", launcher=launcher),
    }[executor_kind]()
    try:
        exp = dryrun(tiny_gpt_script(), executor, [plugin])
    except ValueError as e:
        assert "profiling.output_dir" in str(e) or "profiling.memory_snapshot_path" in str(e), str(e)  # names the arg
        return None
    job = exp.jobs[0]
    program = "torchrun" if launcher else "python"
    if executor_kind.startswith("local"):
        return script_tail(local_argv(job))  # torchx starts it with Popen: no shell
    if executor_kind.startswith("docker"):
        return script_tail(run_docker_command(docker_command(job), tmp)[program])
    return script_tail(run_sbatch_command(sbatch(job), tmp)[program])


KINDS = [
    "local",
    "local-torchrun",
    "slurm",
    "slurm-torchrun",
    "slurm-gpu-metrics",
    "slurm-gpu-metrics-torchrun",
    "docker",
    "docker-torchrun",
]


@pytest.mark.parametrize("kind", KINDS)
@EXAMPLES
@given(value=VALUES)
@example(value="`touch pwned`")  # command substitution: a dropped backtick escape would run it
@example(value="$(touch pwned) ${HOME} $$")
@example(value=":'")  # a single quote: carried, or refused naming the arg
@example(value='\\" \\\\ %s %%')
def test_any_value_arrives_byte_for_byte_or_is_refused(kind, value):
    with tempfile.TemporaryDirectory() as tmp:
        args = _received(kind, value, Path(tmp))
    if args is None:
        return
    cfg = parse_overrides(args).profiling
    assert cfg.output_dir == value, (shlex.join(args), value)
    if not kind.startswith("slurm-gpu-metrics"):
        assert cfg.memory_snapshot_path == f"x{value}y.pickle"
