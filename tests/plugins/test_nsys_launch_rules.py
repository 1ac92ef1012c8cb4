"""The nsys launch rules one by one, on real NeMo Run executors and launchers (nothing is launched):
the wrapper's place in the entrypoint, merging options by their decoded flag names, re-quoting for
GPU metrics, which plugin a refusal or warning names, the GPU metrics nodes, ft_launcher's swap."""

from __future__ import annotations

from dataclasses import dataclass

import nemo_run as run
import pytest
from nemo_run.core.execution.launcher import Launcher, Torchrun

from bridge_plugins import NsysPlugin
from bridge_plugins.plugins.executor_traits import env_value, job_dir_seen_by_job, traits_for
from bridge_plugins.plugins.ft_launcher import plan_fault_tolerance
from bridge_plugins.plugins.nsys_entry import with_wrapper
from bridge_plugins.plugins.nsys_launcher import _gpu_metrics_nodes, merge_nsys_args, plan_nsys, requoted
from bridge_plugins.plugins.quoting import QuotingChain
from recipes.tiny_gpt import tiny_gpt_script
from tests.launch_support import assigned, slurm
from tests.plugins.executor_doubles import UnlistedExecutor
from tests.plugins.plugin_warnings import plugin_warnings

pytestmark = pytest.mark.usefixtures("nemo_home")  # an isolated NeMo Run home per test (tests/conftest.py)


@pytest.mark.parametrize(
    ("entrypoint", "wrapped"),
    [
        ("nsys", "W"),
        ("/opt/nsys/bin/nsys", "/opt/nsys/bin/W"),
        ("srun nsys ", "srun W "),
        ("nsys --foo", "nsys --foo"),
        ("srun", "srun"),
    ],
)
def test_only_a_final_nsys_is_replaced_by_the_wrapper(entrypoint, wrapped):
    assert with_wrapper(entrypoint, "W") == wrapped


def test_options_merge_by_their_decoded_flag_names():
    chain = QuotingChain(("shell",))
    user = chain.encode("--foo=a b")
    assert user == "'--foo=a b'"
    assert merge_nsys_args(["--foo=1", "-x"], [user], chain) == [user, "-x"]
    assert merge_nsys_args(["-a", "1", "-a", "2", "-b"], [], chain) == ["-a", "1", "-b"]  # a repeat is dropped
    assert merge_nsys_args(["-x"], ["-u", "1", "-u", "2", "-y"]) == ["-x", "-u", "1", "-y"]  # no chain: as written


def test_an_option_the_chain_cannot_decode_is_kept_as_written_and_named_as_written():
    """A launcher option that is no shell word (an unbalanced quote) is compared, and kept, as it is."""
    chain = QuotingChain(("shell",))
    assert merge_nsys_args(["'odd", "-x", "1"], [chain.encode("-x=2")], chain) == ["'odd", "-x=2"]
    assert merge_nsys_args(["-y", "'odd"], [], chain) == ["-y", "'odd"]


def test_an_option_that_cannot_be_requoted_for_gpu_metrics_is_refused_naming_the_plugin(tmp_path):
    plain, metrics = QuotingChain(("shell",)), QuotingChain(("shell", "single_quoted"))
    with pytest.raises(ValueError, match=r"^P: the launcher's nsys option \"'bad\" cannot be re-quoted for nsys GPU"):
        requoted("P", ["'bad"], plain, metrics)
    executor = assigned(slurm(launcher=Launcher(nsys_extra_args=["'bad"])), tmp_path)
    with pytest.raises(ValueError, match=r"^NsysPlugin: the launcher's nsys option \"'bad\" cannot be re-quoted"):
        NsysPlugin(nsys_gpu_metrics=True).setup(tiny_gpt_script(), executor)


def test_an_unlisted_executor_is_refused_by_the_nsys_plugin_by_name(tmp_path):
    with pytest.raises(TypeError, match=r"^NsysPlugin: UnlistedExecutor is not supported"):
        NsysPlugin().setup(tiny_gpt_script(), assigned(UnlistedExecutor(), tmp_path))


@dataclass(kw_only=True)
class OwnLauncher(Launcher):
    """A launcher of the user's own, which the container swap does not know."""


def test_container_and_gpu_metrics_warnings_name_the_executor_and_launcher(tmp_path):
    docker = assigned(run.DockerExecutor(container_image="img", launcher=OwnLauncher()), tmp_path)
    assert plugin_warnings(lambda: NsysPlugin().setup(tiny_gpt_script(), docker)) == [
        "NsysPlugin: DockerExecutor with launcher OwnLauncher writes the nsys report under the host job dir, "
        "which the container does not see"
    ]
    again = assigned(run.DockerExecutor(container_image="img"), tmp_path / "again")
    NsysPlugin().setup(tiny_gpt_script(), again)
    assert plugin_warnings(lambda: NsysPlugin().setup(tiny_gpt_script(), again)) == []  # already the container launcher
    docker = assigned(run.DockerExecutor(container_image="img"), tmp_path / "metrics")
    assert plugin_warnings(lambda: NsysPlugin(nsys_gpu_metrics=True).setup(tiny_gpt_script(), docker)) == [
        "NsysPlugin: nsys_gpu_metrics is only supported on SlurmExecutor by NeMo Run; ignored on DockerExecutor"
    ]


@pytest.mark.parametrize(
    ("nodes", "per_node", "ranks", "listed"),
    [
        (2, 1, [1], "1"),
        (2, 4, [3, 4, 7], "0,1"),
        (2, 4, [8], "0"),  # a rank beyond the job: no node of its own, node 0 as NeMo Run's default
        (3, 2, [], "0,1,2"),
    ],
)
def test_gpu_metrics_nodes_are_those_hosting_profiled_ranks(nodes, per_node, ranks, listed):
    assert _gpu_metrics_nodes(slurm(nodes=nodes, ntasks_per_node=per_node), ranks) == listed


def test_ft_launcher_says_whether_the_launcher_it_replaces_had_nsys_on():
    for launcher, had in ((Torchrun(nsys_profile=True), True), (Torchrun(), False), (None, False)):
        executor = run.LocalExecutor(launcher=launcher)
        _edit, new, had_nsys = plan_fault_tolerance(executor, retries=2)
        assert (had_nsys, new.nsys_profile) == (had, False)


def test_a_users_quoted_option_replaces_nemo_runs_default_in_place(tmp_path):
    executor = assigned(slurm(), tmp_path)
    _edit, new = plan_nsys(
        "NsysPlugin",
        executor,
        trace=["nvtx"],
        extra_args=["--capture-range-end=repeat shutdown"],
        gpu_metrics=False,
        profile_ranks=[0],
    )
    assert new.nsys_extra_args == [
        "--force-overwrite=true",
        "--capture-range=cudaProfilerApi",
        "'--capture-range-end=repeat shutdown'",
        "--cuda-graph-trace=node",
        "--cuda-event-trace=false",
    ]


@pytest.mark.parametrize(("ranks", "nodes"), [(None, "0"), ([1], "1")])
def test_gpu_metrics_sample_the_nodes_of_the_profiled_ranks_rank_0_by_default(ranks, nodes, tmp_path):
    """profile_ranks=None profiles rank 0 (Megatron Bridge's default), so only its node is sampled."""
    executor = assigned(slurm(nodes=2, ntasks_per_node=1), tmp_path)
    NsysPlugin(nsys_gpu_metrics=True, profile_ranks=ranks).setup(tiny_gpt_script(), executor)
    assert executor.env_vars["GPU_METRICS_NODES"] == nodes


def test_trace_and_extra_args_given_as_tuples_are_kept_as_lists():
    plugin = NsysPlugin(nsys_trace=("nvtx", "osrt"), nsys_extra_args=("--stats=false",))
    assert (plugin.nsys_trace, plugin.nsys_extra_args) == (["nvtx", "osrt"], ["--stats=false"])
    assert type(plugin.nsys_trace) is list and type(plugin.nsys_extra_args) is list


@pytest.mark.parametrize(("trace", "sent"), [(None, ["nvtx", "cuda"]), (["nvtx", "osrt"], ["nvtx", "osrt"])])
def test_the_users_trace_reaches_the_launcher_and_none_means_megatron_bridges_default(trace, sent, tmp_path):
    executor = assigned(slurm(), tmp_path)
    NsysPlugin(nsys_trace=trace).setup(tiny_gpt_script(), executor)
    assert executor.get_launcher().nsys_trace == sent


def test_a_reserved_flag_is_refused_when_its_value_holds_an_equals_sign():
    """The flag's name ends at the first '=': '--output=/r/a=b' sets --output."""
    with pytest.raises(ValueError, match=r"sets '--output': placement is set per executor; remove it$"):
        NsysPlugin(nsys_extra_args=["--output=/r/a=b"])


@pytest.mark.parametrize("call", [traits_for, job_dir_seen_by_job, lambda e: env_value(e, "/job")])
def test_without_an_owner_an_unlisted_executor_is_refused_in_the_packages_name(call):
    with pytest.raises(TypeError, match=r"^bridge_plugins: UnlistedExecutor is not supported"):
        call(UnlistedExecutor())


def test_env_value_refuses_an_unlisted_executor_in_its_owners_name():
    with pytest.raises(TypeError, match=r"^NsysPlugin: UnlistedExecutor is not supported"):
        env_value(UnlistedExecutor(), "/job", "NsysPlugin")
