"""Test helpers shared by the test modules: reading traces back, launching real jobs cleanly."""

from __future__ import annotations

import functools
import gzip
import json
import os
import re
import shutil
import socket
import sqlite3
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from bridge_plugins.jobdir import names as artifact_names
from bridge_plugins.jobdir.names import TORCH_TRACE_DIR, TORCH_TRACE_SUFFIX

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent

# Variables a torchrun worker (or a Slurm task) leaves in the environment. A job started from
# inside one must not inherit them, or it joins the parent's rendezvous.
DIST_VARS = (
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "ROLE_RANK",
    "ROLE_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCHELASTIC_USE_AGENT_STORE",
    "TORCHELASTIC_RESTART_COUNT",
    "TORCHELASTIC_RUN_ID",
    "TORCHELASTIC_MAX_RESTARTS",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "SLURM_STEP_NUM_TASKS",
    "SLURM_LOCALID",
    "SLURM_RESTART_COUNT",
)

STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")

NSYS_DEFAULTS = [
    "--force-overwrite=true",
    "--capture-range=cudaProfilerApi",
    "--capture-range-end=stop",
    "--cuda-graph-trace=node",
    "--cuda-event-trace=false",
]
"""NeMo Run's default nsys options (Launcher.nsys_extra_args), in the order it emits them."""


def trace_steps(path: Path) -> set[int]:
    """The global step numbers of the ``ProfilerStep#N`` annotations in a (gzip) Chrome trace."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        data = json.load(f)
    steps = set()
    for ev in data["traceEvents"]:
        m = STEP_RE.match(str(ev.get("name", "")))
        if m:
            steps.add(int(m.group(1)))
    return steps


def trace_files(output_dir: Path) -> dict[int, list[Path]]:
    """Traces under output_dir/torch_profile, keyed by the rank in their name."""
    found: dict[int, list[Path]] = {}
    for p in sorted((Path(output_dir) / TORCH_TRACE_DIR).glob("*" + TORCH_TRACE_SUFFIX)):
        name = artifact_names.parse(p)
        found.setdefault(name.rank, []).append(p)
    return found


def assert_window_traces(output_dir: Path, ranks, start: int, end: int) -> None:
    """Exactly one trace per rank in ``ranks``, named for and holding exactly steps [start, end)."""
    files = trace_files(output_dir)
    assert sorted(files) == sorted(ranks), files
    for rank, paths in files.items():
        # environ={}: the name a job that was never restarted writes, whatever this process's environment
        name = artifact_names.torch_trace_stem(rank, start, end - 1, environ={}) + TORCH_TRACE_SUFFIX
        assert [p.name for p in paths] == [name]
        assert trace_steps(paths[0]) == set(range(start, end)), (rank, trace_steps(paths[0]))


def job_logs(job_dir: Path, suffixes: tuple[str, ...] = (".log",)) -> str:
    """Every log NeMo Run kept for a job, concatenated (for failure messages and log assertions).

    Local jobs write ``.log`` files; Slurm jobs write sbatch's ``.out`` (and ``.err``) files.
    """
    logs = (p for p in sorted(Path(job_dir).rglob("*")) if p.suffix in suffixes and p.is_file())
    return "\n".join(p.read_text(errors="replace") for p in logs)


FAKE_NSYS = ROOT / "tests" / "helpers" / "fake_nsys"


def stand_in_nsys(tmp_path: Path) -> tuple[Path, Path]:
    """A bin dir holding the stand-in ``nsys`` (tests/helpers/fake_nsys), and the dir it records
    each invocation in: put the first on the job's PATH, the second in FAKE_NSYS_LOG."""
    bin_dir, log_dir = tmp_path / "bin", tmp_path / "nsys_log"
    bin_dir.mkdir()
    log_dir.mkdir()
    (bin_dir / "nsys").symlink_to(FAKE_NSYS)
    return bin_dir, log_dir


@functools.cache
@functools.cache
def system_path_without_nsys() -> str:
    """A PATH that holds the system's tools (/usr/bin, /bin) but never an ``nsys``, on any machine.

    ``PATH=/usr/bin:/bin`` used to fake "no nsys here"; with Debian's nsight-systems installed
    (scripts/install_nsys.sh) /usr/bin/nsys is there. One directory of links to every program in
    /usr/bin and /bin except nsys, made once per test process (it outlives the process, in /tmp).
    """
    farm = Path(tempfile.mkdtemp(prefix="bridge-no-nsys-"))
    for system_dir in ("/bin", "/usr/bin"):
        for entry in os.scandir(system_dir):
            if entry.name != "nsys" and not (farm / entry.name).exists():
                (farm / entry.name).symlink_to(entry.path)
    return str(farm)


REAL_NSYS = shutil.which("nsys", path="/usr/bin:/usr/local/bin")
"""The real Nsight Systems CLI (scripts/install_nsys.sh installs Debian's 2022.4), or None."""


def nsys_nvtx_ranges(report: Path) -> list[tuple[str, int]]:
    """(range text, process id) of every NVTX push/pop range in an nsys report, in start order, read
    with the real exporter (``nsys export --type sqlite``; eventType 59: a push/pop range)."""
    assert REAL_NSYS is not None
    sqlite_file = report.with_suffix(".sqlite")
    subprocess.run(
        [REAL_NSYS, "export", "--type", "sqlite", "--force-overwrite", "true", "-o", str(sqlite_file), str(report)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    with sqlite3.connect(sqlite_file) as db:
        rows = db.execute(
            "SELECT coalesce(e.text, s.value), (e.globalTid >> 24) & 16777215 FROM NVTX_EVENTS e "
            "LEFT JOIN StringIds s ON s.id = e.textId WHERE e.eventType = 59 ORDER BY e.start"
        ).fetchall()
    return [(text, pid) for text, pid in rows]


def summary_steps(job_dir: Path) -> list[tuple[str, list[int]]]:
    """(format, captured steps) of each trace that ``bridge-plugins summary JOB_DIR --json`` reads
    (a Chrome trace has no ``format``: "chrome")."""
    proc = subprocess.run(
        [sys.executable, "-m", "bridge_plugins", "summary", str(job_dir), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    traces = json.loads(proc.stdout)["traces"]
    return [(t.get("format", "chrome"), [p["step"] for p in t["per_step"]]) for t in traces]


def use_clean_env(monkeypatch) -> None:
    """Make this process's environment ``clean_env()`` (for jobs that NeMo Run spawns from it)."""
    for var in DIST_VARS:
        monkeypatch.delenv(var, raising=False)
    for key, value in clean_env().items():
        monkeypatch.setenv(key, value)


def clean_env(**extra: str) -> dict[str, str]:
    """os.environ without distributed variables, with the venv's bin first on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in DIST_VARS}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{env['PYTHONPATH']}" if env.get("PYTHONPATH") else str(ROOT)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun_cmd(nproc: int, module_args: list[str]) -> list[str]:
    """torchrun on a free port (the fixed default 29500 collides between overlapping runs)."""
    return [
        str(VENV_BIN / "torchrun"),
        "--nnodes",
        "1",
        "--nproc-per-node",
        str(nproc),
        "--rdzv-backend",
        "c10d",
        "--rdzv-endpoint",
        f"127.0.0.1:{free_port()}",
        *module_args,
    ]


def run_job(cmd: list[str], cwd: Path | None = None, timeout: int = 240, **env: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd or ROOT, env=clean_env(**env), capture_output=True, text=True, timeout=timeout)
    return proc


def has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


requires_cuda = pytest.mark.skipif(
    not has_cuda(), reason="needs CUDA (memory snapshots, CUDA kernels, cudaProfilerStart); none on this machine"
)


# ------------------------------------------------------------------------------------------------
# Stand-in programs: run a launch command for real, with srun/python/torchrun/ft_launcher/nsys
# replaced by programs that record their argv (there is no cluster, GPU or nsys here).
# ------------------------------------------------------------------------------------------------


def make_fakes(tmp_path: Path) -> Path:
    """A bin dir: `srun` drops its options and execs the command; `nsys` is the stand-in;
    `python`, `torchrun`, `ft_launcher` record their argv to $ARGV_LOG and exit 0."""
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    (bindir / "srun").write_text(
        "#!/bin/bash\n"
        'while [ $# -gt 0 ]; do case "$1" in\n'
        "  --output|--error|--chdir|--container-image|--container-mounts|--container-workdir|--container-env) shift 2;;\n"
        '  --*) shift;;\n  *) break;;\nesac; done\nexec "$@"\n'
    )
    recorder = (
        f"#!{sys.executable}\nimport json, os, sys\n"
        "name = os.path.basename(sys.argv[0])\n"
        "open(os.path.join(os.environ['ARGV_LOG'], f'{name}.{os.getpid()}.json'), 'w').write(json.dumps(sys.argv[1:]))\n"
    )
    for name in ("python", "torchrun", "ft_launcher"):
        (bindir / name).write_text(recorder)
    for p in bindir.iterdir():
        p.chmod(p.stat().st_mode | stat.S_IEXEC)
    (bindir / "nsys").symlink_to(FAKE_NSYS)
    (tmp_path / "argv").mkdir()
    return bindir


def run_recorded(argv: list[str], tmp_path: Path, check: bool = True, **env) -> dict:
    """Run argv (a shell) with the fakes first on PATH; return {program: argv} recorded
    (with ``check=False`` a failing run returns what was recorded, plus ``"exit"``)."""
    bindir = make_fakes(tmp_path)
    full_env = {
        "PATH": f"{bindir}:{VENV_BIN}:/usr/bin:/bin",
        "ARGV_LOG": str(tmp_path / "argv"),
        "FAKE_NSYS_LOG": str(tmp_path / "argv"),
        "SLURM_JOB_ID": "77",
        "SLURM_NODEID": "0",
        "SLURM_PROCID": "0",
        "SLURM_LOCALID": "0",
        "HOME": os.environ.get("HOME", "/tmp"),
        # the nsys launch wrapper keeps the GPU command shape (cudaProfilerApi) on any machine
        "BRIDGE_PLUGINS_NSYS_GPU": "1",
        **env,
    }
    proc = subprocess.run(argv, env=full_env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 or not check, proc.stdout + proc.stderr
    out = {"exit": [proc.returncode, proc.stdout + proc.stderr]}
    for p in (tmp_path / "argv").iterdir():
        rec = json.loads(p.read_text())
        out[p.name.split(".")[0]] = rec["argv"] if isinstance(rec, dict) else rec  # fake nsys: a record
    return out


def srun_line(text: str) -> str:
    """The job's srun command in an sbatch script (not the head-node lookup)."""
    (line,) = [ln for ln in text.splitlines() if ln.startswith("srun --output")]
    return line


def run_sbatch_command(text: str, tmp_path: Path, check: bool = True, **env) -> dict:
    """Run the sbatch script's srun line through bash (srun, nsys and the job replaced by fakes)."""
    exports = dict(re.findall(r"^export (\w+)=(.*)$", text, re.M))
    return run_recorded(["bash", "-c", srun_line(text)], tmp_path, check, **{**exports, **env})


def run_docker_command(command: list[str], tmp_path: Path, check: bool = True) -> dict:
    """Split and run the container command exactly as DockerContainer.run + docker-py would."""
    from docker.utils.utils import split_command

    return run_recorded(split_command(f'bash -c "{" ".join(command)}"'), tmp_path, check)
