"""Shared by the fault-injection tests (tests/test_reliability_*.py): start the real profiled job
(tests/helpers/reliability_job.py) as its own process, follow what it prints, and check what it
left on disk."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from bridge_plugins.jobdir.on_demand import POLL_ENV
from tests.support import ROOT, clean_env, trace_steps

JOB = ROOT / "tests" / "helpers" / "reliability_job.py"
PIPES_CLOSE_S = 30
"""Seconds ``finish`` waits for the job's pipes to close after it exited. A process the job left
running can hold them open; the checks then run on what was read, as they would have before."""


class Job:
    """The reliability job, started with Popen; ``wait_for(line)`` blocks until it printed ``line``."""

    def __init__(
        self,
        tmp_path: Path,
        start: int,
        end: int,
        steps: int,
        ops: int = 1500,
        sleep_after: float = 0.0,
        cmd_prefix: list[str] | None = None,
        preexec_fn=None,
        on_demand: bool = False,
        **config,
    ):
        self.out = tmp_path / "out"
        self.tmpdir = tmp_path / "tmp"
        self.tmpdir.mkdir(parents=True, exist_ok=True)
        args = [str(JOB), str(self.out), str(start), str(end), str(steps), str(ops), str(sleep_after)]
        cmd = (cmd_prefix or [sys.executable]) + args
        env = clean_env(TMPDIR=str(self.tmpdir), BRIDGE_TEST_CONFIG=json.dumps(config))
        if on_demand:  # the window is requested on demand (polled every 0.05 s), not configured
            env.update(BRIDGE_TEST_ON_DEMAND="1", **{POLL_ENV: "0.05"})
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=preexec_fn
        )
        self.lines: list[str] = []
        self.stderr = ""
        self._seen = threading.Condition()
        self._readers = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read_stdout(self) -> None:
        for line in self.proc.stdout:
            with self._seen:
                self.lines.append(line.strip())
                self._seen.notify_all()

    def _read_stderr(self) -> None:
        self.stderr = self.proc.stderr.read()

    def wait_for(self, line: str, timeout: float = 120) -> None:
        with self._seen:
            if not self._seen.wait_for(lambda: line in self.lines or self.proc.poll() is not None, timeout):
                raise AssertionError(f"job did not print {line!r} within {timeout} s: {self.lines}")
        assert line in self.lines, f"job ended without printing {line!r}: {self.lines}\n{self.stderr}"

    def pid(self) -> int:
        with self._seen:
            self._seen.wait_for(lambda: any(x.startswith("pid ") for x in self.lines), 120)
        return int(next(x for x in self.lines if x.startswith("pid ")).split()[1])

    def finish(self, timeout: float = 120) -> int:
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"job hung: still running {timeout} s later; printed {self.lines}") from None
        for reader in self._readers:  # they end at the pipes' end of file: every line is read then
            reader.join(PIPES_CLOSE_S)
        return rc

    def left_behind(self) -> list[str]:
        """Everything in the trace directory and $TMPDIR that is not a published trace."""
        trace_dir = self.out / "torch_profile"
        names = [p.name for p in trace_dir.iterdir()] if trace_dir.exists() else []
        extra = [n for n in names if n.startswith(".") or not n.endswith(".pt.trace.json.gz")]
        # torch's own: its compile cache (made at import) and torchrun's agent directory
        ours = [p for p in self.tmpdir.iterdir() if not p.name.startswith(("torchinductor_", "torchelastic_"))]
        return extra + [f"$TMPDIR/{p.name}" for p in ours]

    def wait_for_compression(self, timeout: float = 120) -> None:
        """Block until the trace is being compressed: a hidden ``*.gz`` under torch_profile (the
        staging file; the first version's predictable temp name too). Then the export thread
        runs in Python/zlib and lets the main thread handle signals at once."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if any(p.name.startswith(".") for p in (self.out / "torch_profile").rglob("*.gz")):
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"job ended before compressing its trace: {self.lines}\n{self.stderr}")
            time.sleep(0.01)
        raise AssertionError(f"no trace compression within {timeout} s")

    def logged_at(self, text: str) -> float:
        """When the job logged its first line containing ``text`` (epoch seconds, same clock as time.time())."""
        import datetime

        line = next(x for x in self.stderr.splitlines() if text in x)
        return datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()

    def traces(self) -> list[Path]:
        return sorted(p for p in (self.out / "torch_profile").glob("*.pt.trace.json.gz") if not p.name.startswith("."))


def complete_trace_steps(path: Path) -> set:
    """The steps in a published trace, after checking it is a regular file holding complete gzip JSON."""
    assert not os.path.islink(path) and path.is_file(), f"{path} is not a regular file"
    with gzip.open(path, "rb") as f:
        f.read()  # raises on a truncated stream or a CRC mismatch
    return trace_steps(path)
