"""run.Script tasks: settings as `profiling.*=` overrides, quoted per executor so that every value
reaches the job's parser byte for byte (bash, docker-py's split, NeMo Run's macros, OmegaConf)."""

from __future__ import annotations

import shlex

import nemo_run as run
import pytest

from bridge_plugins import ProfilingConfig, PyTorchProfilerPlugin
from bridge_plugins.config.override_values import override_value
from bridge_plugins.plugins import ProfilingPluginWarning
from bridge_plugins.plugins.nemo_run_compat import dryrun_request
from bridge_plugins.plugins.quoting import QuotingChain
from recipes.overrides import parse_overrides
from recipes.tiny_gpt import tiny_gpt_script
from tests.launch_support import (
    AWKWARD,
    awkward_plugin,
    check_awkward,
    docker_command,
    dryrun,
    local_argv,
    my_converter,
    sbatch,
    script_tail,
    slurm,
    user_nsys_plugin,
)
from tests.support import run_docker_command, run_sbatch_command, srun_line

pytestmark = pytest.mark.usefixtures("nemo_home")  # an isolated NeMo Run home per test (tests/conftest.py)


EXPECTED_NSYS_OVERRIDES = [  # Megatron Bridge's keys, order and format: its parser accepts them
    "profiling.use_nsys_profiler=true",
    "profiling.profile_step_start=10",
    "profiling.profile_step_end=15",
    "profiling.profile_ranks=[0,1]",
    "profiling.record_shapes=false",
]


def test_script_local_overrides_exact_and_parse_back():
    exp = dryrun(tiny_gpt_script("train.train_iters=8"), run.LocalExecutor(), [user_nsys_plugin()])
    job = exp.jobs[0]
    jd = job.executor.job_dir
    tail = script_tail(local_argv(job))
    assert tail == ["train.train_iters=8", *EXPECTED_NSYS_OVERRIDES, ""]
    assert dryrun_request(job).role_params["job"][0].env["BRIDGE_PLUGINS_OUTPUT_DIR"] == jd
    cfg = parse_overrides(tail)
    assert cfg.train.train_iters == 8
    assert cfg.profiling == ProfilingConfig(
        use_nsys_profiler=True, profile_step_start=10, profile_step_end=15, profile_ranks=[0, 1]
    )


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
    plugin = user_nsys_plugin(nsys_gpu_metrics=True, output_dir=AWKWARD + ' $x "q"')
    exp = dryrun(tiny_gpt_script("train.train_iters=8"), slurm(launcher=launcher), [plugin])
    recorded = run_sbatch_command(sbatch(exp.jobs[0]), tmp_path)
    assert "--gpu-metrics-devices=0" in recorded["nsys"]
    cfg = parse_overrides(script_tail(recorded["torchrun" if launcher else "python"]))
    assert cfg.profiling.output_dir == AWKWARD + ' $x "q"'
    assert cfg.profiling.profile_ranks == [0, 1] and cfg.train.train_iters == 8


@pytest.mark.parametrize("launcher", [None, "torchrun"])
def test_script_awkward_path_through_docker_command(launcher, tmp_path):
    plugin = PyTorchProfilerPlugin(memory_snapshot_path=AWKWARD, profile_ranks=[0, 1], output_dir='/o/"q" \\ $HOME')
    exp = dryrun(tiny_gpt_script(), run.DockerExecutor(container_image="img", launcher=launcher), [plugin])
    container_command = docker_command(exp.jobs[0])
    recorded = run_docker_command(container_command, tmp_path)
    cfg = parse_overrides(script_tail(recorded["torchrun" if launcher else "python"]))
    assert cfg.profiling.memory_snapshot_path == AWKWARD and cfg.profiling.output_dir == '/o/"q" \\ $HOME'
    assert cfg.profiling.output_dir != "/nemo_run"


def test_script_local_torchrun_args_are_unquoted_before_the_job(tmp_path):
    """NeMo Run's torchrun component shlex-quotes script args and LocalExecutor runs them without a
    shell: torchrun's argv holds the quotes (pinned here, so a NeMo Run change is noticed); the
    plugin routes the job through unquote_argv.py, so the job's sys.argv does not."""
    from bridge_plugins.plugins.script_overrides import UNQUOTE_ARGV
    from tests.plugins.job_argv import job_argv

    exp = dryrun(tiny_gpt_script(), run.LocalExecutor(ntasks_per_node=2, launcher="torchrun"), [user_nsys_plugin()])
    argv = local_argv(exp.jobs[0])
    route = argv.index("-m")
    assert "torchrun" in argv and argv[route - 3 : route] == [UNQUOTE_ARGV, "--quoted", "--nsys-postfix"]
    tail = script_tail(argv)
    assert "'profiling.profile_ranks=[0,1]'" in tail and "profiling.use_nsys_profiler=true" in tail
    assert job_argv(exp.jobs[0], tmp_path) == EXPECTED_NSYS_OVERRIDES  # nor the empty arg NeMo Run appends


def test_custom_converter_replaces_default_and_is_encoded_per_executor():
    plugin = user_nsys_plugin(script_args_converter_fn=my_converter)
    exp = dryrun(tiny_gpt_script("x=1"), run.LocalExecutor(), [plugin])
    assert script_tail(local_argv(exp.jobs[0])) == [
        "x=1",
        "--prof-use-nsys-profiler=true",
        "--prof-use-pytorch-profiler=false",
        "--prof-profile-step-start=10",
        "--prof-profile-step-end=15",
        "--prof-profile-ranks=[0, 1]",
        "--prof-record-shapes=false",
        "--prof-nvtx-per-op=false",
        "--note=a b",
        "",
    ]
    exp = dryrun(tiny_gpt_script("x=1"), slurm(), [plugin])
    line = srun_line(sbatch(exp.jobs[0]))
    assert line.endswith(
        "python -m recipes.train x=1 --prof-use-nsys-profiler=true --prof-use-pytorch-profiler=false "
        "--prof-profile-step-start=10 --prof-profile-step-end=15 '--prof-profile-ranks=[0, 1]' "
        "--prof-record-shapes=false --prof-nvtx-per-op=false '--note=a b' "
    )


def test_script_existing_other_profiler_is_switched_off():
    task = tiny_gpt_script("profiling.use_pytorch_profiler=true", "profiling.record_memory_history=true")
    with pytest.warns(ProfilingPluginWarning, match="had profiling.use_pytorch_profiler=True"):
        exp = dryrun(task, run.LocalExecutor(), [user_nsys_plugin()])
    cfg = parse_overrides(script_tail(local_argv(exp.jobs[0])))
    assert cfg.profiling.use_nsys_profiler and not cfg.profiling.use_pytorch_profiler
    assert cfg.profiling.record_memory_history is True


MACRO_AND_INTERPOLATION = "/o/$$ ${replica_id} ${img_root} ${HOME} ${train.seed} \\${x} $HOME"


@pytest.mark.parametrize(
    "make_executor",
    [
        lambda: run.LocalExecutor(),
        lambda: run.LocalExecutor(ntasks_per_node=2, launcher="torchrun"),
    ],
    ids=["local", "local-torchrun"],
)
@pytest.mark.parametrize("value", ["/o/$$x $$", MACRO_AND_INTERPOLATION], ids=["macros-only", "both"])
def test_script_local_values_survive_macros_and_interpolation(make_executor, value):
    plugin = PyTorchProfilerPlugin(output_dir=value, memory_snapshot_path="s$$.pickle")
    exp = dryrun(tiny_gpt_script(), make_executor(), [plugin])
    cfg = parse_overrides(script_tail(local_argv(exp.jobs[0])))
    assert cfg.profiling.output_dir == value
    assert cfg.profiling.memory_snapshot_path == "s$$.pickle"


@pytest.mark.parametrize("launcher", [None, "torchrun"])
def test_script_slurm_values_survive_macros_and_interpolation(launcher, tmp_path):
    exp = dryrun(
        tiny_gpt_script(), slurm(launcher=launcher), [PyTorchProfilerPlugin(output_dir=MACRO_AND_INTERPOLATION)]
    )
    recorded = run_sbatch_command(sbatch(exp.jobs[0]), tmp_path)
    cfg = parse_overrides(script_tail(recorded["torchrun" if launcher else "python"]))
    assert cfg.profiling.output_dir == MACRO_AND_INTERPOLATION


@pytest.mark.parametrize(
    "text", ["${HOME}", "a\\${x}", "\\", "x\\\\${y}", "${a}${b}", "}${", "${x", "\\${", "$$", "plain"]
)
def test_override_value_is_read_back_verbatim_by_the_job_parser(text):
    cfg = parse_overrides(
        [f"profiling.output_dir={override_value(text)}", f"profiling.memory_snapshot_path={override_value(text + 'f')}"]
    )
    assert (cfg.profiling.output_dir, cfg.profiling.memory_snapshot_path) == (text, text + "f")


@pytest.mark.parametrize(
    "raw", [AWKWARD, "a'b", 'x="y z"', "$$HOME", "\\", "", "plain", "[0,1]", "é `x`", "${img_root}"]
)
@pytest.mark.parametrize(
    "layers",
    [
        (),
        ("shell",),
        ("shell", "macros"),
        ("shell", "single_quoted", "macros"),
        ("shell", "double_quoted"),
        ("bash_double_quoted", "bash_double_quoted", "macros"),
    ],
)
def test_encode_decode_roundtrip(raw, layers):
    chain = QuotingChain(layers)
    if "bash_double_quoted" in layers and "'" in raw:
        pytest.skip("single quotes are refused in that chain")
    assert chain.decode(chain.encode(raw)) == raw


def test_interpolation_escape_round_trips_every_short_string():
    """Every string of up to 4 characters over ``$ { } \\ a`` comes back from OmegaConf unchanged."""
    import itertools

    from omegaconf import OmegaConf

    for length in range(1, 5):
        for chars in itertools.product("${}\\a", repeat=length):
            text = "".join(chars)
            conf = OmegaConf.create({"v": ""})
            conf.merge_with_dotlist([f"v={override_value(text)}"])
            assert OmegaConf.to_container(conf, resolve=True)["v"] == text, text


def test_earlier_plugins_and_users_args_are_requoted_when_gpu_metrics_wrap_the_command(tmp_path):
    """NsysPlugin(nsys_gpu_metrics=True) adds NeMo Run's bash -c '...' level on Slurm+torchrun: args
    written before it (an earlier plugin's, the user's own) must be re-quoted for that level."""
    snapshot = PyTorchProfilerPlugin(memory_snapshot_path="/a b/s.pickle")
    nsys = user_nsys_plugin(nsys_gpu_metrics=True)
    task = tiny_gpt_script("train.train_iters=8", "user.arg=a b $x")
    with pytest.warns(ProfilingPluginWarning, match="use_pytorch_profiler=True; switched off"):
        exp = dryrun(task, slurm(launcher="torchrun"), [snapshot, nsys])
    recorded = run_sbatch_command(sbatch(exp.jobs[0]), tmp_path)
    tail = script_tail(recorded["torchrun"])
    assert tail[:2] == ["train.train_iters=8", "user.arg=a b $x"]
    cfg = parse_overrides(tail[:1] + tail[2:])
    assert cfg.profiling.memory_snapshot_path == "/a b/s.pickle" and cfg.train.train_iters == 8


def test_an_existing_arg_the_gpu_metrics_wrapper_cannot_carry_is_refused():
    task = tiny_gpt_script("user.arg=it's")
    with pytest.raises(ValueError, match=r"user\.arg=it's"):
        dryrun(task, slurm(launcher="torchrun"), [user_nsys_plugin(nsys_gpu_metrics=True)])
