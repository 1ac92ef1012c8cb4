"""A neighbour who can write the shared output directory plants a symlink where the job would
create one of its own directories (``torch_profile/``, the snapshot's directory, ``on_demand/``,
``on_demand/requests/``): nothing of ours is ever written through it or read through it. One
error line names the path, that artifact is not written, training goes on; the trigger CLI says
``error:`` and exits 2. A real directory left there earlier (an earlier job's, a teammate's) is used."""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time

import pytest
import torch

from bridge_plugins import ProfilingConfig, ProfilingController
from bridge_plugins.cli import main as cli_main
from bridge_plugins.jobdir.names import TORCH_TRACE_DIR
from bridge_plugins.jobdir.on_demand import POLL_ENV, list_requests, new_progress, write_progress
from bridge_plugins.jobdir.own_dirs import real_dir_below
from bridge_plugins.runtime.artifacts import ArtifactError, ArtifactWriter
from bridge_plugins.runtime.paths import resolve_snapshot_path
from tests.on_demand_support import on_demand_traces
from tests.support import trace_steps


def loop(ctl, steps, at_step=None):
    """Run ``steps`` real CPU steps under ``ctl``; returns how many ran (all of them: training goes on)."""
    x = torch.randn(32, 32)
    ran = 0
    with ctl:
        for i in range(steps):
            with ctl.step(i):
                (x @ x).sum()
                time.sleep(0.02)
            ran += 1
            if at_step and i in at_step:
                at_step[i]()
    return ran


def everything_under(path):
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def errors(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.fixture
def planter(tmp_path):
    """A directory the neighbour controls (and can read)."""
    d = tmp_path / "planter"
    d.mkdir()
    return d


# ----------------------------------------------------------------------------- traces
@pytest.mark.parametrize(
    "options",
    [{}, {"background_export": False}, {"pytorch_profiler_collect_chakra": True}],
    ids=["background_export", "sync_export", "with_chakra"],
)
def test_planted_torch_profile_symlink_is_never_written_through(tmp_path, planter, caplog, options):
    out = tmp_path / "out"
    out.mkdir()
    (out / TORCH_TRACE_DIR).symlink_to(planter, target_is_directory=True)
    cfg = ProfilingConfig(
        use_pytorch_profiler=True, profile_step_start=1, profile_step_end=3, output_dir=str(out), **options
    )
    ctl = ProfilingController(cfg, rank=0)
    assert loop(ctl, 5) == 5  # training finished
    assert everything_under(planter) == []  # not a trace, not a staging directory
    assert ctl.artifacts == []
    lines = errors(caplog)
    assert lines and all(f"{out / TORCH_TRACE_DIR} is a symlink (planted?)" in m for m in lines), lines
    assert len(lines) == 1 or options.get("pytorch_profiler_collect_chakra"), lines  # chakra: its own line
    assert os.path.islink(out / TORCH_TRACE_DIR)  # the neighbour's link is not ours to remove


@pytest.mark.parametrize("plant", ["fifo", "file"])
def test_torch_profile_that_is_not_a_directory_is_named(tmp_path, caplog, plant):
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / TORCH_TRACE_DIR) if plant == "fifo" else (out / TORCH_TRACE_DIR).write_text("")
    cfg = ProfilingConfig(use_pytorch_profiler=True, profile_step_start=1, profile_step_end=3, output_dir=str(out))
    assert loop(ProfilingController(cfg, rank=0, world_size=1), 5) == 5
    (line,) = errors(caplog)
    assert f"{out / TORCH_TRACE_DIR} is not a directory" in line and "training continues" in line


@pytest.mark.parametrize("owner", ["this user", "another user"])
def test_a_real_torch_profile_left_by_an_earlier_job_is_used(tmp_path, caplog, owner):
    """A team-shared output_dir: an earlier job (maybe a teammate's) made torch_profile/; ours goes beside its trace."""
    out = tmp_path / "out"
    earlier = out / TORCH_TRACE_DIR / "rank0_steps1-2.pt.trace.json.gz"
    earlier.parent.mkdir(parents=True)
    earlier.write_bytes(b"an earlier job's trace")
    if owner == "another user":
        if os.geteuid() != 0:
            pytest.skip("giving a directory to another user needs root")
        os.chown(earlier.parent, 65534, 65534)  # nobody
    cfg = ProfilingConfig(use_pytorch_profiler=True, profile_step_start=1, profile_step_end=3, output_dir=str(out))
    ctl = ProfilingController(cfg, rank=0)
    assert loop(ctl, 5) == 5
    assert [p.name for p in ctl.artifacts] == ["rank0_steps1-2.1.pt.trace.json.gz"]
    assert trace_steps(ctl.artifacts[0]) == {1, 2} and earlier.read_bytes() == b"an earlier job's trace"
    assert errors(caplog) == []


def test_an_output_dir_the_user_configured_as_a_symlink_is_followed(tmp_path, caplog):
    real = tmp_path / "scratch" / "job1"
    real.mkdir(parents=True)
    link = tmp_path / "out"
    link.symlink_to(real, target_is_directory=True)
    cfg = ProfilingConfig(use_pytorch_profiler=True, profile_step_start=0, profile_step_end=2, output_dir=str(link))
    ctl = ProfilingController(cfg, rank=0)
    assert loop(ctl, 3) == 3
    assert [p.parent for p in ctl.artifacts] == [real / TORCH_TRACE_DIR] and errors(caplog) == []


# ----------------------------------------------------------------------------- memory snapshots
def pickle_produce(tmp):
    with open(tmp, "wb") as f:
        f.write(b"snapshot")


@pytest.mark.parametrize("snapshot_path", ["snaps/memory_snapshot.pickle", "snaps/deep/memory_snapshot.pickle"])
def test_memory_snapshot_directory_planted_as_a_symlink_is_refused(tmp_path, planter, snapshot_path):
    """Memory history needs CUDA, so this is the writer the memory backend calls, at the directory
    its ``memory_snapshot_path`` resolves to (a planted ``snaps`` is refused at every depth)."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "snaps").symlink_to(planter, target_is_directory=True)
    directory = resolve_snapshot_path(ProfilingConfig(memory_snapshot_path=snapshot_path), out).parent
    with pytest.raises(ArtifactError) as e:
        ArtifactWriter(out).write("memory snapshot", directory, "memory_snapshot_0", ".pickle", pickle_produce)
    assert f"memory snapshot {directory / 'memory_snapshot_0.pickle'} was not written" in str(e.value)
    assert f"{out / 'snaps'} is a symlink (planted?)" in str(e.value)
    assert everything_under(planter) == []


def test_memory_snapshot_directories_of_our_own_are_made_and_reused(tmp_path):
    out = tmp_path / "out"
    directory = resolve_snapshot_path(ProfilingConfig(memory_snapshot_path="snaps/deep/m.pickle"), out).parent
    writer = ArtifactWriter(out)
    first = writer.write("memory snapshot", directory, "m_0", ".pickle", pickle_produce)
    second = writer.write("memory snapshot", directory, "m_0", ".pickle", pickle_produce)
    assert [first.name, second.name] == ["m_0.pickle", "m_0.1.pickle"] and first.parent == directory


def test_an_absolute_snapshot_directory_the_user_configured_as_a_symlink_is_followed(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "snaps").symlink_to(real, target_is_directory=True)
    out = tmp_path / "out"
    path = ArtifactWriter(out).write("memory snapshot", tmp_path / "snaps", "m_0", ".pickle", pickle_produce)
    assert (real / "m_0.pickle").read_bytes() == b"snapshot" and path == tmp_path / "snaps" / "m_0.pickle"


# ----------------------------------------------------------------------------- on-demand requests
REQUEST = {"id": 1, "start": 20, "end": 23, "ranks": [], "memory": False, "created": 1.0}


@pytest.mark.parametrize("planted", ["on_demand/requests", "on_demand"])
def test_the_poller_never_reads_or_writes_through_a_planted_on_demand_symlink(
    tmp_path, planter, caplog, monkeypatch, planted
):
    monkeypatch.setenv(POLL_ENV, "0.05")
    out = tmp_path / "out"
    (out / planted).parent.mkdir(parents=True, exist_ok=True)
    (out / planted).symlink_to(planter, target_is_directory=True)
    in_planter = planter if planted == "on_demand/requests" else planter / "requests"
    in_planter.mkdir(exist_ok=True)
    before = everything_under(planter)

    def plant_request():  # after the job started: a request it would take if it read the planted directory
        (in_planter / "1.json").write_text(json.dumps(REQUEST))

    cfg = ProfilingConfig(on_demand=True, output_dir=str(out))
    ctl = ProfilingController(cfg, rank=0, world_size=1)
    assert loop(ctl, 40, {3: plant_request}) == 40
    assert on_demand_traces(out) == {} and ctl.artifacts == []  # the planted request was not read
    assert everything_under(planter) == sorted(before + [str((in_planter / "1.json").relative_to(planter))])
    lines = errors(caplog)
    assert lines and all(str(out / planted) in m for m in lines), lines
    assert any(f"{out / planted} is a symlink (planted?)" in m for m in lines), lines


def fresh_progress(out):
    write_progress(
        out,
        new_progress(
            state="running", step=50, step_time=time.time(), steps_per_s=20.0, poll_interval_s=1.0, world_size=1
        ),
    )


@pytest.mark.parametrize("planted", ["on_demand/requests", "on_demand"])
def test_trigger_refuses_a_planted_on_demand_symlink(tmp_path, planter, capsys, planted):
    out = tmp_path / "out"
    if planted == "on_demand":  # the neighbour's directory even holds a progress file that looks alive
        fresh_progress(planter)
        out.mkdir()
        (out / "on_demand").symlink_to(planter / "on_demand", target_is_directory=True)
    else:
        fresh_progress(out)
        (out / planted).symlink_to(planter, target_is_directory=True)
    before = everything_under(planter)
    rc = cli_main(["trigger", str(out), "--steps", "3"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and err.startswith("bridge-plugins trigger: error: "), err
    assert f"{out / planted} is a symlink (planted?)" in err
    assert everything_under(planter) == before  # no request, no temporary file


def test_trigger_writes_into_a_real_requests_directory_made_earlier(tmp_path, capsys):
    fresh_progress(tmp_path)
    (tmp_path / "on_demand" / "requests").mkdir()
    assert cli_main(["trigger", str(tmp_path), "--steps", "3"]) == 0
    assert [n for n, _ in list_requests(tmp_path)] == ["1.json"]


def test_torch_profile_swapped_for_a_symlink_during_the_window_gets_nothing_published(tmp_path, planter, caplog):
    """Someone who may rename entries of output_dir swaps our torch_profile/ for a symlink while the
    window records (Chakra records into its staging directory from the first step), even mirroring
    the staging directory's name with a plausible trace in it: nothing is published through the link."""
    out = tmp_path / "out"

    def swap():
        staged = os.listdir(out / TORCH_TRACE_DIR)
        (out / TORCH_TRACE_DIR).rename(out / "moved")
        (out / TORCH_TRACE_DIR).symlink_to(planter, target_is_directory=True)
        for name in staged:
            (planter / name).mkdir()
            (planter / name / "execution_trace.json").write_text('{"nodes": [], "finish_ts": 1}')

    cfg = ProfilingConfig(
        use_pytorch_profiler=True,
        pytorch_profiler_collect_chakra=True,
        profile_step_start=1,
        profile_step_end=3,
        output_dir=str(out),
    )
    ctl = ProfilingController(cfg, rank=0)
    assert loop(ctl, 5, {1: swap}) == 5
    assert ctl.artifacts == [] and not list(planter.glob("rank*"))
    lines = errors(caplog)
    assert len(lines) == 2 and all(f"{out / TORCH_TRACE_DIR} is a symlink (planted?)" in m for m in lines), lines


def test_a_swap_between_the_check_and_the_staging_directory_is_caught(tmp_path, planter, monkeypatch):
    """The swap lands in the microseconds between the directory check and mkdtemp (timed by
    wrapping mkdtemp: a real rename and a real symlink, at the worst instant)."""
    out = tmp_path / "out"
    (out / TORCH_TRACE_DIR).mkdir(parents=True)
    real_mkdtemp = tempfile.mkdtemp

    def swap_then_mkdtemp(**kwargs):
        (out / TORCH_TRACE_DIR).rename(out / "moved")
        (out / TORCH_TRACE_DIR).symlink_to(planter, target_is_directory=True)
        return real_mkdtemp(**kwargs)

    monkeypatch.setattr(tempfile, "mkdtemp", swap_then_mkdtemp)
    produced = []
    with pytest.raises(ArtifactError, match="torch_profile was replaced while in use"):
        ArtifactWriter(out).write("PyTorch trace", out / TORCH_TRACE_DIR, "rank0_steps1-2", ".gz", produced.append)
    assert produced == [] and everything_under(planter) == []


def test_any_other_failure_names_the_whole_path_not_just_the_last_name(tmp_path):
    """The walk goes by directory descriptors, where the OS names only the last component."""
    (tmp_path / "out").mkdir()
    with pytest.raises(FileNotFoundError) as e:
        real_dir_below(tmp_path / "out", tmp_path / "out" / "on_demand" / "requests", create=False)
    assert e.value.filename == str(tmp_path / "out" / "on_demand")
