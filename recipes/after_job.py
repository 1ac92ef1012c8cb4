"""What ``python -m recipes`` prints after the job: the artifacts and figures (read once), the
steps per rank, why a snapshot is missing, the HTML report, and how to open each file."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from recipes.baseline import earlier_job

if TYPE_CHECKING:  # a type only: the analysis loads when the job is done
    from bridge_plugins.analysis.schema import Summary


def how_to_open(arts, job_dir: Path, baseline: Path | None = None) -> list[str]:
    """How to read what the job wrote, what works offline first (air-gapped login nodes are common).

    ``arts`` is :func:`bridge_plugins.jobdir.scan.find_artifacts`'s result. Empty when there is nothing
    to open, so ``--profiler none`` prints no heading. The HTML report's own line comes before it.
    Every command runs as printed: real paths (``baseline``, an earlier job, for the comparison),
    never a placeholder a shell would read as a redirection.
    """
    if not (arts.traces or arts.memory or arts.nsys):
        return []
    out = ["How to open them (offline, on this machine):"]
    job = shlex.quote(str(job_dir))
    cli = cli_command()
    if arts.traces or arts.memory:
        out.append(f"  {cli} summary {job}    # steps, step times, top operators and kernels, per rank")
    if arts.traces and baseline is not None:
        compare_html = shlex.quote(str(job_dir / "compare_report.html"))
        out.append(
            f"  {cli} report {job} --baseline {shlex.quote(str(baseline))} -o {compare_html}    "
            f"# against the previous run of {baseline.parent.parent.name} ({baseline.parent.name})"
        )
    if arts.memory:
        snapshot = min(p for paths in arts.memory.values() for p in paths)
        out.append(f"  {cli} memory {shlex.quote(str(snapshot))}    # peak, timeline and top allocation sites")
    if arts.nsys:
        report = shlex.quote(str(min(arts.nsys)))
        out.append(f"  nsys stats {report}    # tables in the terminal (nsys-ui {report}: the GUI)")
    if arts.traces and baseline is None:
        out.append(
            "To compare with another run: run this again with the same --base-dir and --name; it then prints "
            "the report command with this job as the baseline."
        )
    if arts.traces:
        out.append("With network access: https://ui.perfetto.dev opens a .pt.trace.json.gz (the file stays local).")
    if arts.memory:
        out.append(
            "With network access: https://pytorch.org/memory_viz opens a .pickle snapshot (the file stays local)."
        )
    return out


def cli_command() -> str:
    """``bridge-plugins`` as the user can type it: by name when PATH finds this install, else by path.

    ``.venv/bin/python -m recipes`` (the README's command) runs without the venv activated, so a
    bare ``bridge-plugins`` would be "command not found" in the user's shell.
    """
    ours = Path(sys.executable).parent / "bridge-plugins"
    found = shutil.which("bridge-plugins")
    if found and ours.exists() and os.path.samefile(found, ours):
        return "bridge-plugins"
    return shlex.quote(str(ours)) if ours.exists() else f"{shlex.quote(sys.executable)} -m bridge_plugins"


def memory_note(args: argparse.Namespace, arts, device: str | None) -> str | None:
    """Why a job that asked for memory history has no snapshot (say so once, at the end)."""
    if not args.memory_history or arts.memory:
        return None
    if device == "cpu":
        why = (
            "because the ranks ran on CPU and memory history records the CUDA caching allocator "
            "(it needs a GPU). Training was not affected."
        )
    else:
        why = "see the warnings in the job's output above."
    return f"Memory history: no memory snapshot was written, {why}"


def write_html_report(job_dir: Path, summary: Summary) -> Path | None:
    """Write ``bridge-plugins report``'s offline HTML page of ``summary`` beside the artifacts; its path.

    A report that fails is a warning, never an error: the job's artifacts are already safe and
    summarized above.
    """
    from bridge_plugins.analysis import render_report, with_top, write_report
    from bridge_plugins.jobdir.names import JOB_REPORT_NAME

    try:
        return write_report(render_report(with_top(summary, 10)), job_dir / JOB_REPORT_NAME)
    except Exception as e:  # noqa: BLE001 - reporting must not turn a finished job into a failure
        print(f"[recipes] warning: the HTML report could not be written: {e}", file=sys.stderr)
        return None


def summarize_job(job_dir: Path) -> Summary | None:
    """Every figure of the job's traces and snapshots, each file read once; None if none is readable."""
    from bridge_plugins.analysis.pipeline import summarize
    from bridge_plugins.jobdir.scan import NothingToRead

    try:
        return summarize([job_dir], top=None)
    except NothingToRead:
        return None


def print_summary(args: argparse.Namespace, job_dir: Path, device: str | None) -> None:
    """What the job wrote: artifacts and figures, steps per rank, memory history, how to open them."""
    from bridge_plugins.analysis import job_report, steps_line
    from bridge_plugins.jobdir.scan import find_artifacts

    if args.profiler == "none" and not args.memory_history:
        print("No profiling artifacts: the job ran with no profiler (--profiler none).")
        return
    arts = find_artifacts(job_dir)
    summary = summarize_job(job_dir)  # the text, the steps and the HTML report all read this one
    text, steps = job_report(job_dir, arts=arts, summary=summary)
    print(text)
    if steps:
        print("\n" + steps_line(steps))
    note = memory_note(args, arts, device)
    if note:
        print("\n" + note)
    html_report = write_html_report(job_dir, summary) if summary is not None else None
    if html_report is not None:
        print(f"\nHTML report: {html_report}  (opens in any browser, no network needed)")
    lines = how_to_open(arts, job_dir, earlier_job(job_dir))
    if lines:
        print("\n" + "\n".join(lines))
