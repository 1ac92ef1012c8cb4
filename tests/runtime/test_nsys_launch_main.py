"""The nsys launch wrapper's steps in this process: the GPU test, the probe and ``main``.

Where ``main`` ends in ``os.execv`` it runs in a forked child whose stderr goes to a file; the child
execs the stand-in nsys (tests/helpers/fake_nsys), which records what it was given.
"""

from __future__ import annotations

import glob
import json
import os
import socket
import sys
from pathlib import Path

import pytest

from bridge_plugins.runtime.entry.nsys_launch import EXIT_NO_NSYS, EXIT_REFUSED, PREFIX, fail, has_gpu, main, probe
from tests.support import stand_in_nsys, system_path_without_nsys

HOST = socket.gethostname()
PROFILE = ["profile", "-t", "cuda", "-o", "r", "--capture-range=cudaProfilerApi", "--capture-range-end=stop"]


@pytest.mark.parametrize(
    "env,expected",
    [
        ({"BRIDGE_PLUGINS_NSYS_GPU": "1", "CUDA_VISIBLE_DEVICES": "-1"}, True),
        ({"BRIDGE_PLUGINS_NSYS_GPU": "0"}, False),
        ({"CUDA_VISIBLE_DEVICES": ""}, False),
        ({"CUDA_VISIBLE_DEVICES": "-1"}, False),
    ],
)
def test_gpu_override_and_hidden_devices(env, expected):
    assert has_gpu(env) is expected


@pytest.mark.parametrize("env", [{}, {"BRIDGE_PLUGINS_NSYS_GPU": "2"}, {"CUDA_VISIBLE_DEVICES": "0"}])
def test_otherwise_a_gpu_is_a_device_file(env):
    assert has_gpu(env) is bool(glob.glob("/dev/nvidia[0-9]*"))


def script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def test_probe_reads_the_version_and_the_help(tmp_path):
    bindir, _ = stand_in_nsys(tmp_path)
    nsys = probe(str(bindir / "nsys"))
    assert nsys.version == "2025.1.1.0-stand-in"
    assert nsys.long_name("-p") == "--nvtx-capture" and nsys.knows("--gpu-metrics-devices")


def test_probe_takes_a_version_from_stderr_and_help_from_both(tmp_path):
    nsys = script(
        tmp_path / "nsys",
        'if [ "$1" = --version ]; then echo "NVIDIA Nsight Systems version 2021.1 (x)" >&2; exit 0; fi\n'
        'printf "\\t--output=\\n"; printf "\\t-t, --trace=\\n" >&2\n',
    )
    found = probe(nsys)
    assert found.version == "2021.1 (x)" and found.long_names == {"--output", "--trace"}


def test_probe_of_an_nsys_that_says_nothing(tmp_path):
    found = probe(script(tmp_path / "nsys", "exit 3\n"))
    assert found.version == "(unknown version)" and found.long_names == frozenset()


def test_fail_is_one_line_and_an_exit_code(capsys):
    with pytest.raises(SystemExit) as raised:
        fail("it broke", 5)
    assert raised.value.code == 5
    assert capsys.readouterr().err == f"{PREFIX}: error on {HOST}: it broke\n"


def run_main(tmp_path: Path, args: list[str], path: str, gpu: str) -> tuple[int, str]:
    """``main(args)`` in a forked child in ``tmp_path`` with PATH and BRIDGE_PLUGINS_NSYS_GPU set:
    (exit code, stderr)."""
    err = tmp_path / "stderr"
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 99
        try:
            fd = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(fd, 2)
            sys.stderr = os.fdopen(fd, "w")  # pytest's capture replaced sys.stderr too
            os.environ.update(
                {"PATH": path, "BRIDGE_PLUGINS_NSYS_GPU": gpu, "FAKE_NSYS_LOG": str(tmp_path / "nsys_log")}
            )
            os.chdir(tmp_path)  # the stand-in writes its report (-o r) here
            main(args)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 98
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), err.read_text()


def run_main_here(monkeypatch, capsys, args: list[str], path: str) -> tuple[int, str]:
    """``main(args)`` in this process, for the paths that end in ``sys.exit``: (exit code, stderr)."""
    monkeypatch.setenv("PATH", path)
    monkeypatch.setenv("BRIDGE_PLUGINS_NSYS_GPU", "1")
    with pytest.raises(SystemExit) as raised:
        main(args)
    return raised.value.code, capsys.readouterr().err


def test_main_without_nsys_on_path_says_so(monkeypatch, capsys):
    code, err = run_main_here(monkeypatch, capsys, PROFILE + ["true"], system_path_without_nsys())
    assert code == EXIT_NO_NSYS == 127
    assert err == (
        f"{PREFIX}: error on {HOST}: there is no 'nsys' binary on PATH, so the job cannot run under Nsight "
        "Systems; install it (scripts/install_nsys.sh on Debian) or put it on the job's PATH\n"
    )


def test_main_refuses_a_command_line_it_cannot_fit(tmp_path, monkeypatch, capsys):
    bindir, _ = stand_in_nsys(tmp_path)
    path = f"{bindir}:{system_path_without_nsys()}"
    code, err = run_main_here(monkeypatch, capsys, ["profile", "--unknown", "v", "true"], path)
    assert code == EXIT_REFUSED == 2
    assert err.startswith(f"{PREFIX}: error on {HOST}: nsys 2025.1.1.0-stand-in does not know the option '--unknown'")
    assert err.count("\n") == 1


@pytest.mark.parametrize("gpu", ["1", "0"])
def test_main_execs_nsys_with_the_plan_and_says_what_it_changed(tmp_path, gpu):
    bindir, log = stand_in_nsys(tmp_path)
    job = ["/bin/sh", "-c", f"echo ${{NSYS_NVTX_PROFILER_REGISTER_ONLY-unset}} > {tmp_path}/env"]
    code, err = run_main(
        tmp_path, [*PROFILE, "--kill=none", "--newer-option=1", *job], f"{bindir}:{system_path_without_nsys()}", gpu
    )
    assert code == 0, err
    (record,) = [json.loads(p.read_text()) for p in log.iterdir()]
    assert record["argv"][0] == "profile" and record["command"] == job
    assert (tmp_path / "env").read_text() == ("unset\n" if gpu == "1" else "0\n")
    lines = err.splitlines()
    assert lines[0] == (
        f"{PREFIX}: warning: nsys 2025.1.1.0-stand-in ({bindir / 'nsys'}) does not know --newer-option=1: left out "
        "(a newer nsys knows it); profiling goes on"
    )
    if gpu == "1":
        assert record["options"] == [*PROFILE[1:], "--kill=none"] and len(lines) == 1
    else:
        assert record["options"] == [
            "-t",
            "cuda,nvtx",
            "-o",
            "r",
            "--capture-range-end=stop",
            "--kill=none",
            "--capture-range=nvtx",
            "--nvtx-capture=bridge_plugins.window",
            "--cpuctxsw=none",
        ]
        assert lines[1:] == [
            f"{PREFIX}: no GPU on {HOST}: capturing the window's NVTX range instead of cudaProfilerApi "
            "(--capture-range=nvtx --nvtx-capture=bridge_plugins.window)"
        ]


def test_main_reads_the_command_line_after_the_program_name(tmp_path, monkeypatch, capsys):
    bindir, _ = stand_in_nsys(tmp_path)
    monkeypatch.setattr(sys, "argv", ["bridge-plugins-nsys", "profile", "--unknown", "v", "true"])
    monkeypatch.setenv("PATH", f"{bindir}:{system_path_without_nsys()}")
    with pytest.raises(SystemExit):
        main()
    assert "does not know the option '--unknown'" in capsys.readouterr().err


class Exec(Exception):
    """Raised by the stand-in ``os.execv``: main stops where it would have become nsys."""


@pytest.mark.parametrize("gpu", ["1", "0"])
def test_main_in_this_process_execs_nsys_with_the_plan_its_environment_and_its_lines(
    tmp_path, monkeypatch, capsys, gpu
):
    """The forked test above with ``os.execv`` stood in by a recorder: the same checks, made here."""
    bindir, _ = stand_in_nsys(tmp_path)
    monkeypatch.setenv("PATH", f"{bindir}:{system_path_without_nsys()}")
    monkeypatch.setenv("BRIDGE_PLUGINS_NSYS_GPU", gpu)
    monkeypatch.setenv("NSYS_NVTX_PROFILER_REGISTER_ONLY", "")  # so that the test's end removes it again
    monkeypatch.delenv("NSYS_NVTX_PROFILER_REGISTER_ONLY")

    def execv(path, argv):
        raise Exec(path, argv)

    monkeypatch.setattr(os, "execv", execv)
    job = ["python", "train.py", "--lr=1"]
    with pytest.raises(Exec) as execd:
        main([*PROFILE, "--kill=none", "--newer-option=1", *job])
    nsys = str(bindir / "nsys")
    if gpu == "1":
        options = [*PROFILE[1:], "--kill=none"]
    else:
        options = ["-t", "cuda,nvtx", "-o", "r", "--capture-range-end=stop", "--kill=none", "--capture-range=nvtx"]
        options += ["--nvtx-capture=bridge_plugins.window", "--cpuctxsw=none"]
    assert execd.value.args == (nsys, [nsys, "profile", *options, *job])
    assert os.environ.get("NSYS_NVTX_PROFILER_REGISTER_ONLY") == (None if gpu == "1" else "0")
    out, err = capsys.readouterr()
    lines = [
        f"{PREFIX}: warning: nsys 2025.1.1.0-stand-in ({nsys}) does not know --newer-option=1: left out "
        "(a newer nsys knows it); profiling goes on"
    ]
    if gpu == "0":
        lines.append(
            f"{PREFIX}: no GPU on {HOST}: capturing the window's NVTX range instead of cudaProfilerApi "
            "(--capture-range=nvtx --nvtx-capture=bridge_plugins.window)"
        )
    assert (out, err.splitlines()) == ("", lines)


def test_two_dropped_options_are_named_in_one_line(tmp_path, monkeypatch, capsys):
    bindir, _ = stand_in_nsys(tmp_path)
    monkeypatch.setenv("PATH", f"{bindir}:{system_path_without_nsys()}")
    monkeypatch.setenv("BRIDGE_PLUGINS_NSYS_GPU", "1")

    def execv(path, argv):
        raise Exec(path, argv)

    monkeypatch.setattr(os, "execv", execv)
    with pytest.raises(Exec):
        main([*PROFILE, "--newer-option=1", "--newest=2", "true"])
    (line,) = capsys.readouterr().err.splitlines()
    assert "does not know --newer-option=1 --newest=2: left out" in line


@pytest.mark.parametrize(
    "env,expected",
    [
        ({}, True),
        ({"CUDA_VISIBLE_DEVICES": "0"}, True),
        ({"CUDA_VISIBLE_DEVICES": ""}, False),
        ({"CUDA_VISIBLE_DEVICES": "-1"}, False),
        ({"BRIDGE_PLUGINS_NSYS_GPU": "0"}, False),
        ({"BRIDGE_PLUGINS_NSYS_GPU": "2"}, True),
    ],
)
def test_on_a_machine_with_a_gpu_device_file(monkeypatch, env, expected):
    """``/dev/nvidia0`` stood in (this machine has none): what CUDA_VISIBLE_DEVICES and the override decide."""
    patterns = []
    monkeypatch.setattr(glob, "glob", lambda pattern: patterns.append(pattern) or ["/dev/nvidia0"])
    assert has_gpu(env) is expected
    assert patterns == (["/dev/nvidia[0-9]*"] if expected else [])  # looked for only when nothing else decides


def test_probe_gives_nsys_two_minutes_and_never_raises_on_its_exit_code(monkeypatch):
    """``subprocess.run`` stood in: an nsys that hangs is stopped after 120 s, one that fails is read anyway."""
    import subprocess

    calls = []

    def run(argv, **kwargs):
        calls.append((argv, kwargs))
        out = "NVIDIA Nsight Systems version 2024.1\n" if argv[1] == "--version" else "\t-o, --output=\n"
        return subprocess.CompletedProcess(argv, 1, out, "")

    monkeypatch.setattr(subprocess, "run", run)
    found = probe("/opt/nsys")
    assert (found.version, found.long_names) == ("2024.1", {"--output"})
    expected = {"capture_output": True, "text": True, "timeout": 120, "check": False}
    assert calls == [(["/opt/nsys", "--version"], expected), (["/opt/nsys", "profile", "--help"], expected)]
