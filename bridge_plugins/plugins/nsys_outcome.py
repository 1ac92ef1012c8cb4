"""Say on the driver's terminal, in one line, why a job under nsys failed (issue 33 point 12).

A job whose nsys cannot run (missing, too old: ``bridge-plugins-nsys`` exits before training) or
that fails to launch ends FAILED, but ``exp.run()`` returns normally and the reason is only in the
job's log. After NeMo Run has waited for the job (nemo_run_compat.after_jobs_end), a FAILED job's
reason is printed to stderr: the wrapper's own error line, else the last line of the newest log.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nemo_run as run

from bridge_plugins.plugins.nemo_run_compat import after_jobs_end

WRAPPER_ERROR = "[bridge_plugins] nsys: error"
_REGISTERED = "_bridge_plugins_says_why_failed"


def failure_line(job_dir: Path) -> str | None:
    """The wrapper's error line in the job's logs, else the newest log's last line (None: no logs)."""
    logs = sorted(
        (p for pattern in ("*.log", "*.out") for p in job_dir.rglob(pattern)), key=lambda p: p.stat().st_mtime
    )
    last = None
    for log in logs:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
        for line in lines:
            if WRAPPER_ERROR in line:
                return line[line.index(WRAPPER_ERROR) :]
        last = lines[-1] if lines else last
    return last


def say_why_failed(owner: str, executor: run.Executor) -> None:
    """Register the one-line report for the job that runs on ``executor`` (this Experiment's copy), once."""
    if getattr(executor, _REGISTERED, False):
        return
    object.__setattr__(executor, _REGISTERED, True)

    def report(jobs: list) -> None:
        for job in jobs:
            if getattr(job, "executor", None) is not executor or "FAILED" not in str(getattr(job, "state", "")):
                continue
            job_dir = Path(job.executor.job_dir)
            why = failure_line(job_dir) if job_dir.is_dir() else None
            print(
                f"[bridge_plugins] {owner}: job {job.id} FAILED: {why or 'no log was written'} (logs under {job_dir})",
                file=sys.stderr,
                flush=True,
            )

    after_jobs_end(report)
