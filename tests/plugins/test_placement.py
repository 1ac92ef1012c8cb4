"""Where nsys reports land and how the nsys wrapper is built, per executor (Slurm, Docker, cloud),
including nsys options that must reach nsys quoted, never run by a shell."""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import fiddle as fdl
import nemo_run as run
import pytest
from nemo_run.core.execution.launcher import Launcher

from bridge_plugins import PyTorchProfilerPlugin
from bridge_plugins.plugins import NsysNotFoundError, ProfilingPluginWarning
from bridge_plugins.plugins.executor_traits import TRAITS, ExecutorTraits
from recipes.overrides import parse_overrides
from recipes.tiny_gpt import tiny_gpt_recipe, tiny_gpt_script
from tests.launch_support import (
    LOCAL_NSYS_WRAPPER,
    NSYS_WRAPPER,
    assigned,
    docker_command,
    dryrun,
    local_argv,
    norm,
    nsys_segment,
    packaged_profiling,
    sbatch,
    slurm,
    user_nsys_plugin,
)
from tests.support import (
    FAKE_NSYS,
    NSYS_DEFAULTS,
    run_docker_command,
    run_sbatch_command,
    srun_line,
    stand_in_nsys,
    system_path_without_nsys,
)

pytestmark = pytest.mark.usefixtures("nemo_home")  # an isolated NeMo Run home per test (tests/conftest.py)


def test_slurm_no_launcher_no_container_partial():
    exp = dryrun(tiny_gpt_recipe(), slurm(), [user_nsys_plugin()])
    job = exp.jobs[0]
    jd = job.executor.job_dir
    text = sbatch(job)
    assert "#SBATCH --ntasks-per-node=2" in text
    line = srun_line(text)
    assert line.endswith(
        f"--chdir {jd}/code --wait=60 --kill-on-bad-exit=1 {nsys_segment(jd)} "
        f"python -m nemo_run.core.runners.fdl_runner -n job {jd}/configs/job_fn_or_script "
    )
    # The packaged config is not rewritten like the sbatch text: it must hold the real path.
    assert packaged_profiling(job).output_dir == jd
    assert os.path.isfile(f"{jd}/nsys_profile/.init")


def test_slurm_torchrun_container_partial():
    exp = dryrun(
        tiny_gpt_recipe(), slurm(nodes=2, launcher="torchrun", container_image="nvcr.io/x:1"), [user_nsys_plugin()]
    )
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
        f"/nemo_run/configs/job_fn_or_script "
    )
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


@pytest.mark.parametrize(
    "launcher,nodes,ntasks,ranks,expect",
    [
        (None, 2, 4, [0, 5], "0,1"),
        (None, 2, 4, [1, 2], "0"),
        (None, 3, 2, [], "0,1,2"),
        ("torchrun", 2, 4, [4], "1"),
    ],
)
def test_slurm_gpu_metrics(launcher, nodes, ntasks, ranks, expect, tmp_path):
    exp = dryrun(
        tiny_gpt_recipe(),
        slurm(nodes=nodes, ntasks_per_node=ntasks, launcher=launcher),
        [user_nsys_plugin(profile_ranks=ranks, nsys_gpu_metrics=True)],
    )
    text = sbatch(exp.jobs[0])
    assert f"\nexport GPU_METRICS_NODES={expect}\n" in text
    line = srun_line(text)
    assert (
        'bash -c \'GPU_METRICS_FLAG=""; if echo "${GPU_METRICS_NODES}" | grep -q -w "${SLURM_NODEID}"; '
        'then GPU_METRICS_FLAG="--gpu-metrics-devices=${SLURM_LOCALID}"; fi; bridge-plugins-nsys profile'
    ) in line
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
    exp = dryrun(
        tiny_gpt_recipe(),
        slurm(nodes=2, env_vars={"GPU_METRICS_NODES": "1"}),
        [user_nsys_plugin(nsys_gpu_metrics=True)],
    )
    assert "\nexport GPU_METRICS_NODES=1\n" in sbatch(exp.jobs[0])


@pytest.mark.parametrize(
    "executor",
    [
        lambda: run.LocalExecutor(),
        lambda: run.DockerExecutor(container_image="img"),
    ],
    ids=["local", "docker"],
)
def test_gpu_metrics_warns_outside_slurm(executor):
    with pytest.warns(ProfilingPluginWarning, match=r"nsys_gpu_metrics is only supported on SlurmExecutor"):
        exp = dryrun(tiny_gpt_recipe(), executor(), [user_nsys_plugin(nsys_gpu_metrics=True)])
    assert exp.jobs[0].executor.get_launcher().nsys_gpu_metrics is False


def test_nsys_extra_args_merge_replaces_defaults_by_flag_name():
    plugin = user_nsys_plugin(
        nsys_extra_args=["--capture-range=nvtx", "--cuda-memory-usage=true", "--capture-range-end", "repeat:2"]
    )
    exp = dryrun(tiny_gpt_recipe(), run.LocalExecutor(), [plugin])
    argv = local_argv(exp.jobs[0])
    assert argv[8:16] == [
        "--force-overwrite=true",
        "--capture-range=nvtx",
        "--capture-range-end",
        "repeat:2",
        "--cuda-graph-trace=node",
        "--cuda-event-trace=false",
        "--cuda-memory-usage=true",
        "python",
    ]


@pytest.mark.parametrize("launcher", [None, "torchrun"])
def test_docker_nsys_report_goes_to_container_job_dir(launcher):
    exp = dryrun(
        tiny_gpt_recipe(),
        run.DockerExecutor(container_image="img", ntasks_per_node=2, launcher=launcher),
        [user_nsys_plugin()],
    )
    job = exp.jobs[0]
    container_command = docker_command(job)
    cmd = norm(container_command)
    assert cmd[: 8 + len(NSYS_DEFAULTS)] == [
        NSYS_WRAPPER,
        "profile",
        "-s",
        "none",
        "-t",
        "nvtx,cuda",
        "-o",
        "/nemo_run/nsys_profile/profile_%p",
        *NSYS_DEFAULTS,
    ]
    assert cmd[8 + len(NSYS_DEFAULTS)] == ("torchrun" if launcher else "python")
    assert cmd[-2:] == ["/nemo_run/configs/job_fn_or_script", ""]
    assert packaged_profiling(job).output_dir == "/nemo_run"
    assert isinstance(job.executor.get_launcher(), run.Torchrun if launcher else Launcher)


@pytest.mark.parametrize(
    "make",
    [
        lambda: run.DGXCloudExecutor(
            base_url="http://x",
            kube_apiserver_url="http://y",
            client_id="i",
            client_secret="s",
            project_name="p",
            container_image="img",
            pvc_nemo_run_dir="/pvc/nemo_run",
            pvcs=[{"path": "/pvc", "claimName": "c"}],
        ),
        lambda: run.LeptonExecutor(container_image="img", nemo_run_dir="/lepton"),
    ],
    ids=["dgxcloud", "lepton"],
)
def test_cloud_executors_use_container_job_dir(make, tmp_path):
    executor = assigned(make(), tmp_path)
    task = tiny_gpt_recipe()
    user_nsys_plugin().setup(task, executor)
    prefix = executor.get_launcher_prefix()
    assert prefix[prefix.index("-o") + 1] == "/nemo_run/nsys_profile/profile_%p"
    assert fdl.build(task.config.profiling).output_dir == "/nemo_run"


def test_fake_nsys_parses_nemo_run_prefix(tmp_path):
    (tmp_path / "rep").mkdir()
    log = tmp_path / "log"
    log.mkdir()
    argv = [
        str(FAKE_NSYS),
        "profile",
        "-s",
        "none",
        "-t",
        "nvtx,cuda",
        "-o",
        f"{tmp_path}/rep/p_%q{{NODE}}_%%",
        *NSYS_DEFAULTS,
        sys.executable,
        "-c",
        "import sys; print(sys.argv[1:])",
        "-x",
        "",
    ]
    proc = subprocess.run(
        argv, capture_output=True, text=True, env={**os.environ, "NODE": "3", "FAKE_NSYS_LOG": str(log)}
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['-x', '']"
    rec = json.loads((tmp_path / "rep" / "p_3_%.nsys-rep").read_text())
    assert rec["command"][0] == sys.executable and rec["options"][-1] == "--cuda-event-trace=false"
    assert len(list(log.iterdir())) == 1


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
    exp = dryrun(
        tiny_gpt_recipe(), run.DockerExecutor(container_image="img"), [user_nsys_plugin(nsys_extra_args=[hostile])]
    )
    container_command = docker_command(exp.jobs[0])
    mount = tmp_path / "mount"  # what the container sees at /nemo_run
    (mount / "nsys_profile").mkdir(parents=True)
    command = [a.replace("/nemo_run/", f"{mount}/") for a in container_command]
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


# ------------------------------------------------------------------------------------------------
# Executors: one table of traits; an executor missing from it is refused, one entry adds it
# ------------------------------------------------------------------------------------------------


@dataclasses.dataclass(kw_only=True)
class NewClusterExecutor(run.Executor):
    """A stand-in for an executor the plugins have never seen."""

    def assign(self, exp_id, exp_dir, task_id, task_dir):
        self.experiment_id, self.experiment_dir, self.job_dir = exp_id, exp_dir, os.path.join(exp_dir, task_dir)


def new_cluster_job_dir(executor):
    return "/workspace/job"


def test_unknown_executor_is_refused_without_changes(tmp_path):
    executor = assigned(NewClusterExecutor(), tmp_path)
    task = tiny_gpt_script()
    with pytest.raises(
        TypeError,
        match=r"PyTorchProfilerPlugin: NewClusterExecutor is not supported \(supported: "
        r"DGXCloudExecutor, .*\); .* add an entry to "
        r"bridge_plugins.plugins.executor_traits.TRAITS",
    ):
        PyTorchProfilerPlugin().setup(task, executor)
    assert task.args == []


def test_a_new_executor_is_one_table_entry(tmp_path, monkeypatch):
    monkeypatch.setitem(
        TRAITS, NewClusterExecutor, ExecutorTraits(job_dir=new_cluster_job_dir, delivery="bash", macros=True)
    )
    executor = assigned(NewClusterExecutor(), tmp_path)
    task = tiny_gpt_script()
    PyTorchProfilerPlugin(output_dir="/o/$HOME it's").setup(task, executor)
    assert shlex.quote('profiling.output_dir="/o/$HOME it\'s"').replace("$", "$$") in task.args
    cfg = parse_overrides([shlex.split(a.replace("$$", "$"))[0] for a in task.args])
    assert cfg.profiling.output_dir == "/o/$HOME it's" and cfg.profiling.use_pytorch_profiler is True
    task = tiny_gpt_script()
    PyTorchProfilerPlugin().setup(task, executor)
    # The job dir travels in the environment (Megatron Bridge's parser rejects a profiling.output_dir key).
    assert parse_overrides([shlex.split(a)[0] for a in task.args]).profiling.output_dir is None
    assert executor.env_vars["BRIDGE_PLUGINS_OUTPUT_DIR"] == "/workspace/job"


# ------------------------------------------------------------------------------------------------
# No nsys binary where the job runs (issue 9.2)
# ------------------------------------------------------------------------------------------------

NO_NSYS = "there is no 'nsys' binary on the job's PATH"


def test_local_nsys_without_an_nsys_binary_says_so_in_one_line(tmp_path, monkeypatch):
    """setup cannot tell exp.dryrun() from exp.run(): it warns (one line) instead of refusing, so a
    dryrun still works; exp.run() refuses (the tests below)."""
    monkeypatch.setenv("PATH", system_path_without_nsys())
    with pytest.warns(ProfilingPluginWarning, match=NO_NSYS) as record:
        exp = dryrun(tiny_gpt_recipe(), run.LocalExecutor(), [user_nsys_plugin()])
    (message,) = [str(w.message) for w in record if NO_NSYS in str(w.message)]
    assert "\n" not in message and message.startswith("NsysPlugin: ") and "LocalExecutor" in message
    assert local_argv(exp.jobs[0])[0] == LOCAL_NSYS_WRAPPER


def marker_script(tmp_path):
    """A job that leaves a file behind if it ever starts (it ignores the profiling arguments)."""
    job = tmp_path / "job.py"
    job.write_text(f"open({str(tmp_path / 'started')!r}, 'w').close()\n")
    return run.Script(path=str(job), entrypoint="python"), tmp_path / "started"


def test_local_nsys_run_without_an_nsys_binary_is_refused_before_launch(tmp_path, monkeypatch):
    """exp.run() fails with our one-line error, before anything launches (it used to end in
    torchx's Popen FileNotFoundError traceback); the dryrun above still works."""
    monkeypatch.setenv("PATH", system_path_without_nsys())
    task, started = marker_script(tmp_path)
    with pytest.warns(ProfilingPluginWarning, match=NO_NSYS), run.Experiment("plugtest", log_level="WARN") as exp:
        exp.add(task, executor=run.LocalExecutor(), plugins=[user_nsys_plugin()], name="job")
        with pytest.raises(NsysNotFoundError) as raised:
            exp.run(sequential=True)
    message = str(raised.value)
    assert "\n" not in message and message.startswith("NsysPlugin: ") and NO_NSYS in message
    assert "LocalExecutor" in message and "exp.dryrun()" in message
    assert isinstance(raised.value, FileNotFoundError), "code that caught the old error still catches it"
    assert not exp.jobs[0].launched and not started.exists()


def test_run_run_without_an_nsys_binary_is_refused_before_launch(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", system_path_without_nsys())
    task, started = marker_script(tmp_path)
    with pytest.warns(ProfilingPluginWarning, match=NO_NSYS), pytest.raises(NsysNotFoundError, match=NO_NSYS):
        run.run(task, executor=run.LocalExecutor(), plugins=[user_nsys_plugin()], name="job")
    assert not started.exists()


def test_local_nsys_installed_after_setup_runs(tmp_path, monkeypatch):
    """The check is made again at exp.run(): nsys put on the executor's PATH after exp.add() is found."""
    bindir, nsys_log = stand_in_nsys(tmp_path)
    monkeypatch.setenv("PATH", system_path_without_nsys())
    monkeypatch.setenv("FAKE_NSYS_LOG", str(nsys_log))
    task, started = marker_script(tmp_path)
    with pytest.warns(ProfilingPluginWarning, match=NO_NSYS), run.Experiment("plugtest", log_level="WARN") as exp:
        exp.add(task, executor=run.LocalExecutor(), plugins=[user_nsys_plugin()], name="job")
        exp.jobs[0].executor.env_vars["PATH"] = (
            f"{bindir}:{os.path.dirname(sys.executable)}:{system_path_without_nsys()}"
        )
        exp.run(sequential=True)
    assert exp.jobs[0].launched and started.exists()
    assert list(nsys_log.iterdir()), "the job ran under the stand-in nsys"


def test_direct_run_needs_no_nsys(tmp_path, monkeypatch):
    """exp.run(direct=True) runs the task in this process, without the nsys wrapper: not refused."""
    monkeypatch.setenv("PATH", f"{os.path.dirname(sys.executable)}:{system_path_without_nsys()}")
    task, started = marker_script(tmp_path)
    with pytest.warns(ProfilingPluginWarning, match=NO_NSYS), run.Experiment("plugtest", log_level="WARN") as exp:
        exp.add(task, executor=run.LocalExecutor(), plugins=[user_nsys_plugin()], name="job")
        exp.run(direct=True)
    assert started.exists()


def test_local_nsys_binary_found_on_the_executor_path(tmp_path, monkeypatch):
    bindir, _ = stand_in_nsys(tmp_path)
    monkeypatch.setenv("PATH", system_path_without_nsys())
    with warnings.catch_warnings():
        warnings.simplefilter("error", ProfilingPluginWarning)
        dryrun(
            tiny_gpt_recipe(),
            run.LocalExecutor(env_vars={"PATH": f"{bindir}:{system_path_without_nsys()}"}),
            [user_nsys_plugin()],
        )


def test_slurm_nsys_does_not_look_for_nsys_on_the_submitting_host(monkeypatch):
    monkeypatch.setenv("PATH", system_path_without_nsys())
    with warnings.catch_warnings():
        warnings.simplefilter("error", ProfilingPluginWarning)
        dryrun(tiny_gpt_recipe(), slurm(), [user_nsys_plugin()])


@pytest.mark.parametrize("launcher", [None, "torchrun"])
def test_earlier_nsys_options_are_requoted_when_gpu_metrics_wrap_the_command(launcher, tmp_path):
    first = user_nsys_plugin(nsys_extra_args=["--env-var=A=x y 'q' $z"])
    second = user_nsys_plugin(nsys_gpu_metrics=True)
    exp = dryrun(tiny_gpt_recipe(), slurm(launcher=launcher), [first, second])
    recorded = run_sbatch_command(sbatch(exp.jobs[0]), tmp_path)
    assert "--env-var=A=x y 'q' $z" in recorded["nsys"] and "--gpu-metrics-devices=0" in recorded["nsys"]


def test_a_plugin_warning_points_at_the_users_line(tmp_path, monkeypatch):
    """Python prints a warning with the file and line it names: that should be the user's
    ``exp.add(...)``, not a line inside bridge_plugins or NeMo Run."""
    monkeypatch.setenv("PATH", system_path_without_nsys())
    with (
        pytest.warns(ProfilingPluginWarning, match=NO_NSYS) as record,
        run.Experiment("plugtest", log_level="WARN") as exp,
    ):
        exp.add(tiny_gpt_recipe(), executor=run.LocalExecutor(), plugins=[user_nsys_plugin()], name="job")
    (w,) = [w for w in record if NO_NSYS in str(w.message)]
    assert w.filename == __file__, w.filename
    assert "exp.add(" in Path(__file__).read_text().splitlines()[w.lineno - 1]
