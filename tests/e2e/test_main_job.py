"""The main job, `python -m recipes`, as a user runs it (real NeMo Run, real torchrun ranks)."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bridge_plugins.jobdir.names import JOB_REPORT_NAME
from recipes.arguments import build_parser, check_args
from tests.support import has_cuda, run_job, system_path_without_nsys, trace_files, trace_steps

pytestmark = pytest.mark.integration


def recipes(*args):
    return [sys.executable, "-m", "recipes", *args]


def test_main_job_profiles_the_window_on_two_local_ranks(tmp_path):
    args = (
        "--steps",
        "8",
        "--start",
        "3",
        "--end",
        "6",
        "--ranks",
        "0,1",
        "--memory-history",
        "--base-dir",
        str(tmp_path),
    )
    proc = run_job(recipes(*args))
    out = proc.stdout
    assert proc.returncode == 0, out[-4000:] + proc.stderr[-4000:]
    assert "Steps captured per rank: rank 0: 3-5, rank 1: 3-5" in out
    assert "| loss" in out, "progress lines from the running job"
    assert "Top operators by self time" in out and "aten::" in out
    job_dirs = list((tmp_path / "experiments" / "tiny_gpt_profiling").glob("*/tiny_gpt"))
    assert len(job_dirs) == 1
    # how to open them: what works offline first; no deprecated TensorBoard plugin
    assert "How to open them" in out and f"bridge-plugins summary {job_dirs[0]}" in out
    assert "HTML report: " in out and "offline" in out
    assert "run this again with the same --base-dir" in out, "a first run has no earlier job to compare with"
    assert "ui.perfetto.dev" in out and "tensorboard" not in out.lower()
    # kineto's USDT profiler_start/stop lines are in the job's own log, never on the user's terminal
    logs = "".join(p.read_text(errors="replace") for p in job_dirs[0].rglob("*.log"))
    assert "USDT:" in logs and "profiler_start" in logs
    assert "USDT" not in out and "USDT" not in proc.stderr
    if not has_cuda():
        # one consistent story about memory history on CPU: the final summary says none was written, and why
        assert (
            "no memory snapshot was written" in out
            and "CUDA" in out.split("no memory snapshot was written", 1)[1][:200]
        )
        assert "memory snapshots go to" not in out
    files = trace_files(job_dirs[0])
    assert sorted(files) == [0, 1]
    for rank, paths in files.items():
        assert [p.name for p in paths] == [f"rank{rank}_steps3-5.pt.trace.json.gz"]
        assert trace_steps(paths[0]) == {3, 4, 5}
        assert f"rank {rank}: {paths[0]}" in out
    assert_offline_report_beside_artifacts(out, job_dirs[0], steps={0: [3, 4, 5], 1: [3, 4, 5]})


def assert_offline_report_beside_artifacts(out, job_dir, steps):
    """The HTML report the job printed exists beside the artifacts, needs no network and holds the job's steps."""
    line = next((s for s in out.splitlines() if s.startswith("HTML report: ")), None)
    assert line is not None, "the job prints its HTML report's path"
    printed = Path(line.split("HTML report: ", 1)[1].split("  ", 1)[0])
    assert printed == job_dir / JOB_REPORT_NAME and printed.is_file()
    html = printed.read_text(encoding="utf-8")
    assert "<script src" not in html.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.I), "no remote resource"
    summary = json.loads(
        subprocess.run(
            [sys.executable, "-m", "bridge_plugins", "summary", str(job_dir), "--json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert {t["rank"]: t["steps"]["captured"] for t in summary["traces"]} == steps
    captured = sorted({s for ranks in steps.values() for s in ranks})
    assert f"Steps captured: {', '.join(map(str, captured))}." in html
    for t in summary["traces"]:
        assert Path(t["file"]).name in html, "each rank's trace is in the page"


def test_nsys_without_an_nsys_binary_fails_before_launch_and_points_to_dryrun(tmp_path):
    proc = run_job(recipes("--profiler", "nsys", "--base-dir", str(tmp_path)), PATH=system_path_without_nsys())
    assert proc.returncode == 2
    assert "'nsys' binary on PATH" in proc.stderr and "--dryrun" in proc.stderr
    assert not (tmp_path / "experiments").exists(), "nothing was launched or written"


def test_dryrun_prints_the_local_nsys_launch_command(tmp_path):
    proc = run_job(recipes("--profiler", "nsys", "--dryrun", "--start", "4", "--end", "7", "--base-dir", str(tmp_path)))
    assert proc.returncode == 0, proc.stderr[-3000:]
    # the job-side wrapper in nsys' place, by path (the venv need not be on the job's PATH)
    wrapper = f"{Path(sys.executable).parent}/bridge-plugins-nsys profile "
    line = next(s.strip() for s in proc.stdout.splitlines() if s.strip().startswith(wrapper))
    assert " torchrun " in line and "--nproc-per-node 2" in line
    assert "--capture-range=cudaProfilerApi" in line
    assert f"-o {tmp_path}/experiments/tiny_gpt_profiling/" in line and "/tiny_gpt/nsys_profile/profile_%p" in line
    assert "'use_nsys_profiler': True" in proc.stdout and "'profile_step_start': 4" in proc.stdout
    assert "'record_memory_history': False" in proc.stdout


def test_dryrun_nsys_with_memory_history_keeps_it_in_the_job_config(tmp_path):
    proc = run_job(recipes("--profiler", "nsys", "--memory-history", "--dryrun", "--base-dir", str(tmp_path)))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "'use_nsys_profiler': True" in proc.stdout and "'record_memory_history': True" in proc.stdout


def test_dryrun_prints_the_sbatch_script(tmp_path):
    proc = run_job(
        recipes(
            "--dryrun", "--executor", "slurm", "--account", "acct1", "--partition", "part1", "--base-dir", str(tmp_path)
        )
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "sbatch script:" in proc.stdout
    assert "#SBATCH --account=acct1" in proc.stdout and "#SBATCH --partition=part1" in proc.stdout
    script = proc.stdout.split("sbatch script:", 1)[1].split("job's profiling config:", 1)[0]
    assert "torchrun" in script and "nsys profile" not in script


@pytest.mark.parametrize(
    "args,words",
    [
        (["--start", "10", "--end", "30"], ["runs past the last step (19)"]),
        (["--ranks", "0,x"], ["--ranks"]),
        (["--executor", "slurm"], ["--account and --partition"]),
        (["--start", "5", "--end", "5", "--steps", "8"], ["--end 5", "give --end 6 or more"]),
        (["--profiler", "none", "--memory-history"], ["--memory-history needs a window"]),
        (["--ranks", "5", "--nproc", "2"], ["--ranks '5': no rank 5", "--nproc 2", "0-1"]),
        (["--ranks", "0,2", "--nproc", "2"], ["--ranks '0,2': no rank 2"]),
        (["--base-dir", "/dev/null/x"], ["--base-dir", "/dev/null"]),
        (["--inject", "sync", "--profiler", "nsys"], ["--inject sync", "--profiler pytorch"]),
        (["--inject", "oom"], ["--inject", "invalid choice: 'oom'"]),
    ],
)
def test_bad_options_fail_before_anything_runs(tmp_path, args, words):
    proc = run_job(recipes("--base-dir", str(tmp_path), *args), BRIDGE_SLURM_ACCOUNT="", BRIDGE_SLURM_PARTITION="")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    for w in words:
        assert w in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "experiments").exists()


@pytest.mark.parametrize(
    "problem,kind", [("sync", "sync_point"), ("slow-input", "input_bound"), ("slow-step", "step_variance")]
)
def test_an_injected_problem_is_what_diagnose_finds_in_the_job_directory(tmp_path, problem, kind):
    """``--inject``: the job's summary opens with the finding, and ``diagnose`` on its directory ranks it."""
    args = ("--steps", "7", "--start", "2", "--end", "7", "--nproc", "1", "--inject", problem)
    proc = run_job(recipes(*args, "--base-dir", str(tmp_path)))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    (job_dir,) = (tmp_path / "experiments" / "tiny_gpt_profiling").glob("*/tiny_gpt")
    findings = proc.stdout.split("Findings", 1)[1].split("\n\n", 1)[0]
    assert kind in findings, proc.stdout[-4000:]
    diagnose = subprocess.run(
        [sys.executable, "-m", "bridge_plugins", "diagnose", "--json", str(job_dir)], capture_output=True, text=True
    )
    assert diagnose.returncode == 0, diagnose.stderr
    kinds = [f["kind"] for f in json.loads(diagnose.stdout)["findings"]]
    assert kind in kinds, kinds
    found = json.loads(diagnose.stdout)["findings"][kinds.index(kind)]
    assert found["time_us_per_step"] > 0 and found["advice"], found


def test_base_dir_that_is_a_file_is_a_clean_error(tmp_path):
    a_file = tmp_path / "not_a_dir"
    a_file.write_text("x")
    proc = run_job(recipes("--base-dir", str(a_file), "--dryrun"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"--base-dir {a_file}" in proc.stderr and "not a directory" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "flag",
    ["--base-dir", "--account", "--partition"],
)
def test_values_that_reach_a_shell_unquoted_are_refused(tmp_path, flag):
    """NeMo Run runs `mkdir -p <base dir>` through a shell and writes the job name (from the
    account) unquoted into the srun line: `$(...)` there ran even on --dryrun."""
    marker = tmp_path / "ran"
    value = f"x$(touch {marker})"
    base = [] if flag == "--base-dir" else ["--base-dir", str(tmp_path / "home")]
    slurm = {
        "--base-dir": ["--account", "a", "--partition", "p"],
        "--account": ["--partition", "p"],
        "--partition": ["--account", "a"],
    }[flag]
    value = str(tmp_path / value) if flag == "--base-dir" else value
    proc = run_job(recipes("--executor", "slurm", *slurm, *base, flag, value, "--dryrun"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert flag in proc.stderr and "Traceback" not in proc.stderr
    assert not marker.exists()


def test_every_flag_has_help_text():
    for action in build_parser()._actions:
        assert action.help, f"{action.option_strings} has no help text"


def test_slurm_nsys_without_nsys_here_warns_and_leaves_the_check_to_the_node(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", system_path_without_nsys())
    parser = build_parser()
    args = parser.parse_args(["--profiler", "nsys", "--executor", "slurm", "--account", "a", "--partition", "p"])
    check_args(args, parser)  # no SystemExit: clusters often have nsys on compute nodes only
    err = capsys.readouterr().err
    assert "warning:" in err and "'nsys'" in err and "compute node" in err
    local = parser.parse_args(["--profiler", "nsys"])
    with pytest.raises(SystemExit) as info:
        check_args(local, parser)
    assert info.value.code == 2


def test_slurm_nsys_job_checks_for_nsys_on_the_node_and_fails_clearly(tmp_path):
    proc = run_job(
        recipes(
            "--profiler",
            "nsys",
            "--dryrun",
            "--executor",
            "slurm",
            "--account",
            "a",
            "--partition",
            "p",
            "--base-dir",
            str(tmp_path),
        )
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    script = proc.stdout.split("sbatch script:", 1)[1].split("job's profiling config:", 1)[0]
    check = next(line for line in script.splitlines() if "command -v nsys" in line)
    assert "ERROR" not in check, "set -v echoes this line into every job's log, where progress shows ERROR lines"
    assert script.index(check) < script.index("nsys profile"), "checked before srun starts nsys"
    node = subprocess.run(
        ["bash", "-c", check], env={"PATH": system_path_without_nsys()}, capture_output=True, text=True
    )
    assert node.returncode == 127
    assert "[recipes] error:" in node.stderr and "'nsys'" in node.stderr and "Nsight Systems" in node.stderr


def test_profiler_none_prints_no_empty_how_to_open_heading(tmp_path):
    proc = run_job(recipes("--profiler", "none", "--steps", "2", "--nproc", "1", "--base-dir", str(tmp_path)))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "How to open them" not in proc.stdout
    assert "no profiler" in proc.stdout


def test_the_readme_driver_example_runs_and_prints_its_artifacts(tmp_path):
    """Run with the venv's Python but the venv not active (its bin not on PATH): it used to end in a
    58-line traceback, FileNotFoundError 'torchrun'."""
    from tests.support import ROOT

    assert shutil.which("torchrun", path="/usr/bin:/bin") is None
    proc = run_job(
        [sys.executable, str(ROOT / "examples" / "profile_tiny_gpt.py")],
        cwd=tmp_path,
        NEMORUN_HOME=str(tmp_path),
        PATH="/usr/bin:/bin",
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    line = next(s for s in proc.stdout.splitlines() if s.strip().startswith("rank 0 trace: "))
    path = line.split("rank 0 trace: ", 1)[1]
    assert path.startswith(str(tmp_path)) and path.endswith("rank0_steps10-14.pt.trace.json.gz")
    assert trace_steps(path) == set(range(10, 15))


def test_a_failed_jobs_log_tail_leaves_out_kineto_markers_only(tmp_path):
    from recipes.job_output import is_kineto_marker, log_tail

    marker = "USDT:2026-11-30 18:58:24 16877:16877 SyncActivityProfilerHandler.cpp:52] profiler_start"
    stage = "STAGE:2026-11-30 18:58:56 18186:18186 SyncActivityProfilerHandler.cpp:51] Completed Stage: Warm Up"
    assert is_kineto_marker(marker) and is_kineto_marker(f"[default0]:{marker}") and is_kineto_marker(stage)
    assert not is_kineto_marker("USDT rates fell") and not is_kineto_marker("ERROR:2026-11-30 kineto failed")
    log = tmp_path / "nemo_run" / "job" / "0" / "combined.log"
    log.parent.mkdir(parents=True)
    log.write_text(
        "\n".join([f"[default0]:{marker}", "Traceback (most recent call last):", stage, "ValueError: boom", ""])
    )
    assert log_tail(tmp_path) == ["Traceback (most recent call last):", "ValueError: boom"]


def test_job_report_is_a_warning_when_it_cannot_be_written_and_absent_when_nothing_is_readable(tmp_path, capsys):
    import gzip

    from bridge_plugins.jobdir import names as artifact_names
    from recipes.after_job import summarize_job, write_html_report

    assert summarize_job(tmp_path) is None, "no traces or snapshots: no summary, so no report"
    traces = tmp_path / artifact_names.TORCH_TRACE_DIR
    traces.mkdir()
    step = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "ts": 0, "dur": 10, "pid": 1, "tid": 1}
    name = artifact_names.torch_trace_stem(0, 3, 3, environ={}) + artifact_names.TORCH_TRACE_SUFFIX
    with gzip.open(traces / name, "wt") as f:
        json.dump({"traceEvents": [step]}, f)
    summary = summarize_job(tmp_path)
    (tmp_path / JOB_REPORT_NAME).mkdir()  # something in the way of the report
    assert write_html_report(tmp_path, summary) is None
    err = capsys.readouterr().err
    assert "warning: the HTML report could not be written" in err and "Traceback" not in err
    (tmp_path / JOB_REPORT_NAME).rmdir()
    assert write_html_report(tmp_path, summary) == tmp_path / JOB_REPORT_NAME and not capsys.readouterr().err


def test_ctrl_c_stops_the_job_and_still_summarizes_its_profile(tmp_path):
    """A terminal's Ctrl-C (SIGINT to the main job's process group; NeMo Run starts the job in a
    session of its own, so the job never sees it). It used to wait for the job to finish on its
    own and then end in a KeyboardInterrupt traceback with no summary."""
    import os
    import signal
    import threading
    import time

    from tests.support import ROOT, clean_env

    args = ("--steps", "100000", "--start", "3", "--end", "100000", "--ranks", "0", "--base-dir", str(tmp_path))
    proc = subprocess.Popen(
        recipes(*args),
        cwd=ROOT,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    lines, seen = [], threading.Event()

    def follow():
        for line in proc.stdout:
            lines.append(line)

    def training_started():  # read the job's log directly: the main job prints it in batches
        logs = [p for p in tmp_path.glob("experiments/*/*/tiny_gpt/**/*.log") if p.is_file()]
        return any("step 4 |" in p.read_text(errors="replace") for p in logs)

    def watch():
        while proc.poll() is None and not seen.is_set():
            if training_started():
                seen.set()
            time.sleep(0.1)

    threading.Thread(target=follow, daemon=True).start()
    threading.Thread(target=watch, daemon=True).start()
    try:
        assert seen.wait(120), "".join(lines)
        pressed = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        rc = proc.wait(60)
        took = time.monotonic() - pressed
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        kill_processes_mentioning(str(tmp_path))  # the job's own session, if it was left running
    out, err = "".join(lines), proc.stderr.read()
    assert rc == 130, out[-3000:] + err[-3000:]
    assert took < 30, f"the job was stopped, not waited for: {took:.0f} s"
    assert "Ctrl-C: stopping the job" in err and "Traceback" not in err, err[-3000:]
    (job_dir,) = (tmp_path / "experiments").glob("*/*/tiny_gpt")
    (trace,) = trace_files(job_dir)[0]
    steps = trace_steps(trace)
    assert min(steps) == 3 and 4 <= max(steps) < 99999, "the window closed early, on the job's SIGTERM"
    assert trace.name == f"rank0_steps3-{max(steps)}.pt.trace.json.gz"
    assert f"Steps captured per rank: rank 0: 3-{max(steps)}" in out
    # torchrun's agent, stopped by the SIGTERM the cancel sent, says so in the log; the terminal
    # already said "stopping the job" (issue 33: a stray "Process N got signal: 15" line)
    assert "got signal" not in out and "Traceback" not in out and "death signal" not in out, out[-3000:]


def processes_mentioning(text: str) -> list[int]:
    """The pids of processes whose command line holds ``text`` (a test's own tmp path)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


def kill_processes_mentioning(text: str) -> None:
    """SIGKILL every process whose command line holds ``text`` (a test's own tmp path)."""
    import os
    import signal

    for pid in processes_mentioning(text):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def test_plugin_warnings_are_one_line_each(tmp_path):
    """A plugin's warning (here: no nsys on this machine, which a dry run turns into a note) is one
    line, not Python's two-line warning with our source file and line."""
    proc = run_job(
        recipes("--profiler", "nsys", "--dryrun", "--base-dir", str(tmp_path)), PATH=system_path_without_nsys()
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (line,) = [x for x in (proc.stdout + proc.stderr).splitlines() if "no 'nsys' binary" in x]
    assert line.startswith("[recipes] note: no 'nsys' binary on PATH here"), "a dry run is what it would suggest"
    assert "ProfilingPluginWarning" not in proc.stderr and "plan_nsys_binary_check" not in proc.stderr


def _wait_until_mapped(pid: int, library: str, timeout: float = 60.0) -> None:
    """Wait until process ``pid`` has loaded ``library`` (a shared object an import maps)."""
    import time

    deadline = time.monotonic() + timeout
    while library not in Path(f"/proc/{pid}/maps").read_text():
        assert time.monotonic() < deadline, f"{library} not loaded after {timeout} s"
        time.sleep(0.005)  # a poll, not a wait for luck: the event is the mapping


def test_ctrl_c_before_the_job_is_launched_is_one_line(tmp_path):
    """Ctrl-C while the main job still imports NeMo Run (seconds): nothing was launched, so
    nothing is left running; it used to end in a KeyboardInterrupt traceback, or in a RuntimeError
    when it landed in a dataclass being built."""
    import os
    import signal

    from tests.support import ROOT, clean_env

    proc = subprocess.Popen(
        recipes("--base-dir", str(tmp_path)),
        cwd=ROOT,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        # PyYAML's C part is loaded by the plugins' imports (OmegaConf), which NeMo Run's follow:
        # the Ctrl-C lands in the middle of the job's imports, not in Python's own start-up.
        _wait_until_mapped(proc.pid, "_yaml.cpython")
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        kill_processes_mentioning(str(tmp_path))
    assert proc.returncode == 130, err[-3000:]
    assert err == "\n[recipes] interrupted (Ctrl-C)\n" and out == "", (out, err[-3000:])
    assert not (tmp_path / "experiments").exists(), "nothing was launched"


def _start_as_in_a_script_with_ampersand(tmp_path, *args: str) -> subprocess.Popen:
    """The main job as ``cmd &`` in a script starts it: SIGINT ignored (as nohup does for SIGHUP)."""
    import signal

    from tests.support import ROOT, clean_env

    return subprocess.Popen(
        recipes(*args, "--ranks", "0", "--base-dir", str(tmp_path)),
        cwd=ROOT,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )


def _wait_for(proc: subprocess.Popen, what: str, reached) -> None:
    """Poll ``reached()`` (a file the job writes) until it is true; fail if the job ends first."""
    import time

    deadline = time.monotonic() + 120
    while not reached():
        assert time.monotonic() < deadline and proc.poll() is None, f"training never reached {what}"
        time.sleep(0.2)


def test_started_with_ctrl_c_ignored_the_main_job_keeps_ignoring_it(tmp_path):
    """A Ctrl-C meant for the script that started the main job with ``&`` must not stop the job."""
    import os
    import signal

    proc = _start_as_in_a_script_with_ampersand(tmp_path, "--steps", "300", "--start", "3", "--end", "6")
    try:
        _wait_for(
            proc, "the window", lambda: list(tmp_path.glob("experiments/*/*/tiny_gpt/torch_profile/rank0_steps3-5*"))
        )
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        kill_processes_mentioning(str(tmp_path))
    assert proc.returncode == 0, err[-3000:]
    assert "Ctrl-C" not in err and "SUCCEEDED" in out


def test_started_with_ctrl_c_ignored_a_sigterm_stops_the_job_as_ctrl_c_does(tmp_path):
    """``cmd &`` in a script ignores Ctrl-C, so ``kill PID`` (SIGTERM) is how it is stopped. It used
    to end the main job alone, silently, and leave the job (its own session) training on (issue 33)."""
    import os
    import signal

    proc = _start_as_in_a_script_with_ampersand(tmp_path, "--steps", "100000", "--start", "3", "--end", "100000")
    logs = lambda: tmp_path.glob("experiments/*/*/tiny_gpt/**/*.log")  # noqa: E731
    try:
        _wait_for(proc, "step 4", lambda: any("step 4 |" in p.read_text(errors="replace") for p in logs()))
        os.kill(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
        left = processes_mentioning(str(tmp_path))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        kill_processes_mentioning(str(tmp_path))
    assert proc.returncode == 143, (out[-2000:], err[-2000:])
    assert "[recipes] SIGTERM: stopping the job" in err and "Traceback" not in err, err[-3000:]
    assert not left, "the job was left running"
    assert "Steps captured per rank: rank 0: 3-" in out, out[-3000:]


def _run_main_of(tmp_path, body: str) -> subprocess.CompletedProcess:
    """``run_main`` of recipes/__main__.py around a ``main`` whose body is ``body``, as ``python -m``."""
    from tests.support import ROOT, clean_env

    (tmp_path / "entry_of_test.py").write_text(
        "import os, signal\nfrom recipes.__main__ import run_main\ndef main():\n"
        + "".join(f"    {line}\n" for line in body.splitlines())
        + "run_main(main)\n"
    )
    env = clean_env(PYTHONPATH=f"{tmp_path}:{ROOT}")
    return subprocess.run(
        [sys.executable, "-m", "entry_of_test"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )


def test_ctrl_c_while_a_class_is_built_is_one_line(tmp_path):
    """Python 3.11 turns a KeyboardInterrupt raised while a class is built (dataclass fields'
    ``__set_name__``, all over NeMo Run's imports) into ``RuntimeError: Error calling __set_name__``:
    CI once ended test_ctrl_c_before_the_job_is_launched_is_one_line in that traceback, exit 1."""
    body = (
        "class Field:\n"
        "    def __set_name__(self, owner, name):\n"
        "        raise KeyboardInterrupt\n"
        "class Script:\n"
        "    args = Field()\n"
        "return 0"
    )
    proc = _run_main_of(tmp_path, body)
    assert (proc.returncode, proc.stderr, proc.stdout) == (130, "\n[recipes] interrupted (Ctrl-C)\n", "")


def test_a_ctrl_c_signal_before_the_launch_ends_the_job_at_once(tmp_path):
    """Before the launch nothing needs stopping, so a Ctrl-C ends the main job where it lands: even
    inside code that swallows every exception (as some imports do), which a KeyboardInterrupt
    would not get out of."""
    body = (
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "except BaseException:\n"
        "    print('the Ctrl-C was swallowed')\n"
        "return 0"
    )
    proc = _run_main_of(tmp_path, body)
    assert (proc.returncode, proc.stderr, proc.stdout) == (130, "\n[recipes] interrupted (Ctrl-C)\n", "")


def test_ctrl_c_caught_after_it_hit_exec_d_code_still_exits_130(tmp_path):
    """CPython marks a KeyboardInterrupt that leaves code run by ``exec(str)`` as unhandled, and a
    ``python -m`` program then dies by SIGINT (exit -2) however it handled it. Ctrl-C while the main
    job imports lands there often (dataclasses build their methods with exec): under load
    test_ctrl_c_before_the_job_is_launched_is_one_line failed 1 in 6 that way."""
    from tests.support import ROOT, clean_env

    (tmp_path / "interrupted_in_exec.py").write_text(
        "from recipes.__main__ import run_main\ndef main():\n    exec('raise KeyboardInterrupt')\nrun_main(main)\n"
    )
    env = clean_env(PYTHONPATH=f"{tmp_path}:{ROOT}")
    proc = subprocess.run(
        [sys.executable, "-m", "interrupted_in_exec"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (proc.returncode, proc.stderr, proc.stdout) == (130, "\n[recipes] interrupted (Ctrl-C)\n", "")
