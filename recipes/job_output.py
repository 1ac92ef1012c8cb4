"""What the main job shows of a running job's output: its progress lines, never torch's noise.

NeMo Run writes the job's output to log files (``combined.log`` locally, the sbatch ``.out`` on
Slurm); :class:`Progress` follows them and prints the lines a user wants. kineto's
``USDT:... profiler_start/stop`` (and ``STAGE:...``) lines stay in the logs and never reach the
terminal; silencing them at the source would also silence kineto's own warnings and errors.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

# kineto's own log prefix, for its USDT and STAGE markers: "USDT:2026-11-30 18:58:24 16877:16877 File.cpp:52] ..."
_KINETO_MARKER = re.compile(r"^(USDT|STAGE):\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d+:\d+ \S+:\d+\] ")
_RANK_PREFIX = re.compile(r"^\[default\d+\]:")  # torchrun's per-rank tee prefix
# what torchrun's agent logs when the SIGTERM of our own cancel reaches it (Ctrl-C): the terminal already said so
_OUR_STOP_ECHO = re.compile(
    r"SignalException: Process \d+ got signal: 15|SIGTERM death signal, shutting down workers|"
    r"^Traceback \(most recent call last\):$"
)
_DEVICE = re.compile(r"training \d+ steps on \d+ rank\(s\), device (\w+)")  # recipes.train's first log line


def is_kineto_marker(line: str) -> bool:
    """True for kineto's USDT/STAGE marker lines, which tell a user nothing."""
    return bool(_KINETO_MARKER.match(_RANK_PREFIX.sub("", line.strip())))


def job_logs(job_dir: Path) -> list[Path]:
    """The job's log files: NeMo Run's per-job ``combined.log`` (local) and ``*.out`` (Slurm)."""
    return sorted(job_dir.rglob("combined.log")) + sorted(job_dir.rglob("*.out"))


def log_tail(job_dir: Path, lines: int = 15) -> list[str]:
    """The last lines of the job's newest log, without kineto's markers: why a failed job failed."""
    logs = job_logs(job_dir)
    if not logs:
        return []
    newest = max(logs, key=lambda p: p.stat().st_mtime)
    text = newest.read_text(errors="replace").splitlines()
    return [line for line in text if line.strip() and not is_kineto_marker(line)][-lines:]


class Progress:
    """Prints the job's training log lines (step, loss, artifacts, warnings) while NeMo Run waits for it.

    Also notes the device the ranks train on (``device``), from recipes.train's first log line,
    so the final summary can say why there is no memory snapshot on a machine without CUDA.
    """

    KEYS = (
        "| loss",
        "wrote ",
        "profiling window",
        "WARNING",
        "ERROR",
        "Traceback",
        "Error",
        "Exception:",
        "[bridge_plugins] nsys",  # the nsys launch wrapper: options left out, CPU capture, no usable nsys
    )

    def __init__(self, job_dir: Path):
        self.job_dir, self.stop = job_dir, threading.Event()
        self.seen: dict[Path, int] = {}
        self.printed: set[str] = set()  # NeMo Run writes each line to several logs (per rank, combined)
        self.device: str | None = None
        self.stopping: Callable[[], bool] = lambda: False  # set once the main job stops the job (Ctrl-C)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.started = time.monotonic()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=5)
        self._poll()

    def _run(self) -> None:
        while not self.stop.wait(1.0):
            self._poll()

    def _poll(self) -> None:
        for log in sorted(self.job_dir.rglob("*.out")) + sorted(self.job_dir.rglob("*.log")):
            try:
                with open(log, errors="replace") as f:
                    f.seek(self.seen.get(log, 0))
                    chunk = f.read()
                    self.seen[log] = f.tell()
            except OSError:
                continue
            for line in chunk.splitlines():
                self._show(_RANK_PREFIX.sub("", line.strip()))

    def _show(self, line: str) -> None:
        if self.device is None and (m := _DEVICE.search(line)):
            self.device = m.group(1)
        if is_kineto_marker(line) or not any(k in line for k in self.KEYS) or line in self.printed:
            return
        if self.stopping() and _OUR_STOP_ECHO.search(line):
            return
        self.printed.add(line)
        print(f"  [{time.monotonic() - self.started:5.1f}s] {line}", flush=True)
