"""FaultTolerancePlugin: ft_launcher, retries, rendezvous settings, and nsys switched off in either
plugin order (bridge_plugins.config.conflicts)."""

from __future__ import annotations

from dataclasses import dataclass

import nemo_run as run
import pytest

from bridge_plugins import FaultTolerancePlugin, ProfilingConfig
from bridge_plugins.plugins import ProfilingPluginWarning
from recipes.overrides import parse_overrides
from recipes.tiny_gpt import tiny_gpt_recipe, tiny_gpt_script
from tests.launch_support import (
    AWKWARD,
    assigned,
    dryrun,
    foreign_pretrain,
    packaged_container,
    sbatch,
    script_tail,
    slurm,
    user_nsys_plugin,
)
from tests.support import run_sbatch_command, srun_line

pytestmark = pytest.mark.usefixtures("nemo_home")  # an isolated NeMo Run home per test (tests/conftest.py)


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
    assert (
        " ft_launcher --ft-initial_rank_heartbeat_timeout 1800 --ft-rank_heartbeat_timeout 300 --max-restarts 3 "
        in line
    )
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
    executor = assigned(slurm(launcher="torchrun"), tmp_path)
    executor.get_launcher()  # someone configured the Torchrun launcher already
    FaultTolerancePlugin().setup(tiny_gpt_recipe(), executor)
    launcher = executor.get_launcher()
    assert isinstance(launcher, run.FaultTolerance) and launcher.cfg_path and launcher.job_results_file
    assert executor.ntasks_per_node == 1 and executor.torchrun_nproc_per_node == 2


def test_ft_keeps_torchrun_rendezvous_and_sets_retries(tmp_path):
    executor = assigned(run.LocalExecutor(launcher=run.Torchrun(rdzv_port=12345, rdzv_backend="static")), tmp_path)
    FaultTolerancePlugin(
        num_in_job_restarts=1,
        num_job_retries_on_failure=4,
        initial_rank_heartbeat_timeout=None,
        rank_heartbeat_timeout=60.5,
    ).setup(tiny_gpt_recipe(), executor)
    launcher = executor.get_launcher()
    assert (launcher.rdzv_port, launcher.rdzv_backend, launcher.max_restarts) == (12345, "static", 1)
    assert (launcher.initial_rank_heartbeat_timeout, launcher.rank_heartbeat_timeout) == (None, 60.5)
    assert executor.retries == 4 and launcher.nsys_profile is False


def test_ft_without_ft_section_warns(tmp_path):
    @dataclass
    class NoFT:
        profiling: ProfilingConfig | None = None

    task = run.Partial(foreign_pretrain, cfg=run.Config(NoFT))
    with pytest.warns(ProfilingPluginWarning, match="NoFT has no 'ft' section"):
        FaultTolerancePlugin().setup(task, assigned(run.LocalExecutor(), tmp_path))
