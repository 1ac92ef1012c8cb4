"""Reading traces in parallel processes (--jobs): the same bytes as one after another, a dying
worker, the progress line, the flags. Real GPU traces (../shared fixtures) and real CPU traces of
the recipe; the Ray cluster test is tests/e2e/test_ray_cluster.py."""

from __future__ import annotations

import io
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bridge_plugins.analysis import parallel
from bridge_plugins.analysis.parallel import WORKER_DIED, Progress, Workers
from bridge_plugins.analysis.pipeline import summarize_trace
from bridge_plugins.analysis.trace.reader import TraceError
from tests.analysis.gpu_traces import FIXTURES, JOBS
from tests.analysis.recipe_traces import profiled_run
from tests.support import ROOT


def cli(*args: object, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    environ.update(PYTHONPATH=str(ROOT), **env)
    return subprocess.run(
        [sys.executable, "-m", "bridge_plugins", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env=environ,
    )


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> list[Path]:
    """Every GPU fixture, two CPU traces of the recipe (ranks 0 and 1), a truncated trace and a
    file that is not a trace: what a job directory of many ranks holds, with its broken files."""
    d = tmp_path_factory.mktemp("many")
    for f in JOBS["job128"] + JOBS["job2"]:
        shutil.copy(FIXTURES / f, d / f)
    cpu = d / "cpu"
    profiled_run(cpu, 2, 5)
    (trace,) = (cpu / "torch_profile").iterdir()
    shutil.copy(trace, d / "cpu_rank0.json.gz")
    shutil.copy(trace, d / "cpu_rank1.json.gz")
    data = (FIXTURES / JOBS["job2"][0]).read_bytes()
    (d / "cut_rank5.json.gz").write_bytes(data[: len(data) // 2])
    (d / "notes.json").write_text("[1, 2]")
    return sorted(p for p in d.iterdir() if p.is_file())


@pytest.mark.parametrize("command", ["summary --json", "summary", "compare --json", "compare"])
@pytest.mark.slow  # process pools and every subcommand, seconds each
def test_jobs_gives_the_same_bytes_as_one_process(inputs, tmp_path, command):
    args = command.split()
    if args[0] == "compare":
        base, new = tmp_path / "base" / "torch_profile", tmp_path / "new" / "torch_profile"
        base.mkdir(parents=True), new.mkdir(parents=True)
        for r, p in enumerate(p for p in inputs if p.name.endswith(".gz")):  # one job directory per run
            shutil.copy(p, (base if r % 2 else new) / f"rank{r}_steps1-2.pt.trace.json.gz")
        paths = [base.parent, new.parent]
    else:
        paths = inputs
    one = cli(*args, *paths, "--jobs", "1")
    assert one.returncode == 0, one.stderr
    assert "skipped" in one.stderr and "truncated gzip stream" in one.stderr  # the broken files are listed...
    for n in (2, 3, 16):
        many = cli(*args, *paths, "--jobs", n)
        assert many.returncode == 0, many.stderr
        assert many.stdout == one.stdout, f"--jobs {n} differs from --jobs 1"
        assert many.stderr == one.stderr  # ...the same way, in the same order, and nothing else (no TTY)


def test_report_jobs_same_page(inputs, tmp_path):
    pages = []
    for n in (1, 2):
        out = tmp_path / f"r{n}.html"
        r = cli("report", *inputs, "-o", out, "--jobs", n)
        assert r.returncode == 0, r.stderr
        pages.append(re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", "TIME", out.read_text()))  # the footer's clock
    assert pages[0] == pages[1] and "rank 1" in pages[0]


def _die_on_job2(path: Path) -> dict:
    """The per-trace unit, except that the worker process reading job2 is killed (SIGKILL) mid-read."""
    if "job2" in path.name:
        os.kill(os.getpid(), signal.SIGKILL)
    return summarize_trace(path)


def test_a_worker_that_dies_costs_only_its_file(inputs):
    traces = [p for p in inputs if p.name.startswith("job")]
    done = Workers(jobs=2).map(_die_on_job2, traces, TraceError)
    assert [d.path for d in done] == traces
    by_name = {d.path.name: d for d in done}
    dead = by_name.pop("job2_rank0.json.gz")
    assert dead.value is None and dead.error.startswith(f"{dead.path}: the process reading it died")
    assert WORKER_DIED.split("(")[0] in dead.error and "retried 2 times" in dead.error
    for d in by_name.values():  # the others were read, whether they shared a pool with it or not
        assert d.error is None and d.value == summarize_trace(d.path)


def _bug(path: Path) -> None:
    raise ZeroDivisionError(str(path))


def test_an_error_that_is_not_a_bad_trace_ends_the_run_as_in_a_loop(inputs):
    with pytest.raises(ZeroDivisionError):
        Workers(jobs=2).map(_bug, inputs[:3], TraceError)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_line_on_a_terminal_only():
    term = _Terminal()
    p = Progress("bridge-plugins summary", 3, 3_000_000, stream=term, after=0)
    for _ in range(3):
        p.advance(1_000_000)
    p.close()
    shown = term.getvalue()
    assert "bridge-plugins summary: 3/3 files, 0.00/0.00 GB" in shown.replace("\x1b[K", "")
    assert re.search(r"\d+ MB/s", shown) and shown.endswith("\r\x1b[K")  # the line is wiped at the end
    pipe = io.StringIO()
    p = Progress("x", 3, 3, stream=pipe, after=0)
    p.advance(1)
    p.close()
    assert pipe.getvalue() == ""


def test_flags(inputs):
    r = cli("summary", *inputs, "--jobs", "0")
    assert r.returncode == 2 and "--jobs 0: give a positive number" in r.stderr
    r = cli("summary", *inputs, "--jobs", "2", "--ray", "auto")
    assert r.returncode == 2 and "give one" in r.stderr
    # a local run never imports ray
    code = (
        "import sys, contextlib, io\nfrom bridge_plugins.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()): main(['summary', '--json', *sys.argv[1:]])\n"
        "print('ray' in sys.modules)"
    )
    r = subprocess.run([sys.executable, "-c", code, *map(str, inputs)], capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "False", r.stderr


def _summary_interrupted(tmp_path: Path, prelude: str = "", files: int = 4) -> tuple[subprocess.Popen, list[int]]:
    """``summary --jobs 2`` over ``files`` big traces (one: read in two ranges, one by a worker),
    Ctrl-C'd (SIGINT to its process group, as a terminal sends it) once the workers run; ``prelude`` is
    Python run before the CLI. The process and its workers' pids."""
    from benchmarks.analysis_scale import build

    big = build(tmp_path / "r0.json", 30)
    assert big > 0
    for i in range(1, files):
        os.link(tmp_path / "r0.json", tmp_path / f"r{i}.json")
    environ = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    code = prelude + "import sys\nfrom bridge_plugins.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "summary", "--json", "--jobs", "2", *sorted(tmp_path.glob("r*.json"))],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        # one file: split over the workers, whatever the machine's load
        env={**environ, "PYTHONPATH": str(ROOT), "BRIDGE_PLUGINS_SPLIT": "always"},
        start_new_session=True,  # its own process group, as a shell gives a command
    )
    children: list[int] = []
    workers = 2 if files > 1 else 1  # a pool over the files, or one trace in ranges: this process and one worker
    while len(children) < workers and proc.poll() is None:  # the workers started: the read is under way
        children = [int(c) for c in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()]
    assert proc.poll() is None, "summary ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)
    return proc, children


@pytest.mark.parametrize("files", [4, 1])
def test_ctrl_c_stops_the_workers_too(tmp_path, files):
    """Ctrl-C mid-run: exit 130, no worker process left, nothing on stderr."""
    proc, children = _summary_interrupted(tmp_path, files=files)
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (130, "")
    for pid in children:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2], pid


def test_ctrl_c_leaves_no_error_at_exit(tmp_path):
    """At exit, concurrent.futures wakes each pool's manager thread without the lock that thread
    closes its pipe under: if it is still tearing the pool down, Python prints "Exception ignored
    ... Bad file descriptor" (CI saw it once). The driver waits for that thread on Ctrl-C. Here both
    sides are slowed (a stand-in for a loaded machine) so that without the wait the race is lost
    every time."""
    prelude = (
        "import sys, time\nfrom concurrent.futures import process\n"
        "def slow_wakeup(self):\n"  # at exit: between its check and its write, the pipe gets closed
        "    if not self._closed:\n"
        "        if sys._getframe(1).f_code.co_name == '_python_exit':\n"
        "            time.sleep(1.0)\n"
        "        self._writer.send_bytes(b'')\n"
        "process._ThreadWakeup.wakeup = slow_wakeup\n"
        "join_internals = process._ExecutorManagerThread.join_executor_internals\n"
        "def slow_join(self):\n"  # the manager thread closes that pipe 0.5 s into its tear-down
        "    time.sleep(0.5)\n"
        "    join_internals(self)\n"
        "process._ExecutorManagerThread.join_executor_internals = slow_join\n"
    )
    proc, _ = _summary_interrupted(tmp_path, prelude)
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (130, "")


def _gone(pid: int) -> bool:
    """No such process, or a zombie: it ended."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not parallel.FORKS, reason="prctl's parent-death signal: Linux")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_pool_worker_ends_with_the_process_that_started_it(sig):
    """A command stopped by SIGTERM or SIGKILL (no Python cleanup runs) leaves no worker waiting
    on the pool's queue forever (one was seen still there 10 minutes later)."""
    code = (
        "import sys, time\nfrom bridge_plugins.analysis.parallel import start_pool\n"
        "pool = start_pool(1)\nprint(*pool._processes, flush=True)\ntime.sleep(120)\n"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    worker = int(p.stdout.readline())
    assert not _gone(worker)
    p.send_signal(sig)
    p.wait(timeout=60)
    deadline = time.monotonic() + 30
    while not _gone(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(worker)
