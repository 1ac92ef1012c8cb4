"""The run the main job suggests comparing with: the previous run of the same experiment.

NeMo Run lays jobs out as ``<home>/experiments/<title>/<experiment id>/<job name>``; the main job's
``--name`` is the title, so the same command run twice gives two experiments of one title.
"""

from __future__ import annotations

from pathlib import Path


def _finished(job_dir: Path) -> float | None:
    """When the job wrote its last PyTorch trace (None: it wrote none)."""
    from bridge_plugins.jobdir.names import TORCH_TRACE_DIR, TORCH_TRACE_SUFFIX

    times = [p.stat().st_mtime for p in (job_dir / TORCH_TRACE_DIR).glob(f"*{TORCH_TRACE_SUFFIX}") if p.is_file()]
    return max(times, default=None)


def earlier_job(job_dir: Path) -> Path | None:
    """The newest other job of the same experiment title that left PyTorch traces no later than
    ``job_dir``'s, or None. Another experiment's job is never "the run before"."""
    job_dir = Path(job_dir)
    title_dir = job_dir.parent.parent
    this = _finished(job_dir)
    runs = [(t, d) for d in title_dir.glob("*/*") if d != job_dir and (t := _finished(d)) is not None]
    runs = [(t, d) for t, d in runs if this is None or t <= this]
    return max(runs, key=lambda run: (run[0], str(run[1])))[1] if runs else None
