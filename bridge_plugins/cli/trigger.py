"""``bridge-plugins trigger JOB_DIR --steps N [--ranks 0,1|all] [--memory]``: profile a running job now.

Reads the job's progress (``JOB_DIR/on_demand/progress.json``, written by rank 0 of a job started
with ``on_demand=True``), picks an absolute start step safely ahead of it and clear of the
configured window and of earlier requests, and publishes ``JOB_DIR/on_demand/requests/<id>.json``.
Every rank reads it and the named ranks profile the same steps with the PyTorch profiler. No
restart; nothing here imports torch or the runtime.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bridge_plugins.cli import UsageError
from bridge_plugins.jobdir.names import TORCH_TRACE_DIR, TORCH_TRACE_SUFFIX, torch_trace_stem
from bridge_plugins.jobdir.on_demand import (
    MAX_STEPS,
    ProtocolError,
    plan_start,
    progress_path,
    publish_request,
    read_progress,
    valid_requests,
)

FRESH_S = 10.0
"""Progress older than max(FRESH_S, 5 poll intervals) means the job is not running (or hangs)."""
CHECK_ON_DEMAND = (
    "A job started with on_demand=true (profiling.on_demand=true, ProfilingConfig(on_demand=True)) logs "
    "'on-demand profiling on: `bridge-plugins trigger <output_dir> --steps N`' when training starts: look for that "
    "line in its log, and try again once it is there."
)
"""How to tell that a job runs with on-demand profiling, and where: said when the trigger finds no job."""


def add_parser(sub) -> None:
    p = sub.add_parser(
        "trigger",
        help="ask a running job (started with on_demand=True) to profile its next steps",
        description="Ask a running job (started with on_demand=True) to profile its next N steps on the given "
        "ranks with the PyTorch profiler, no restart. Every named rank captures the same global steps.",
    )
    p.add_argument(
        "job_dir", metavar="JOB_DIR", help="the job's profiling output_dir (the job directory under NeMo Run)"
    )
    p.add_argument("--steps", type=int, required=True, help=f"how many steps to profile (1-{MAX_STEPS})")
    p.add_argument("--ranks", default="0", help="global ranks, e.g. 0,1 (default 0), or 'all'")
    p.add_argument("--memory", action="store_true", help="also write a CUDA memory snapshot at the window's end")
    p.set_defaults(run=run)


def parse_ranks(text: str) -> list[int]:
    """``all`` -> [] (every rank); ``0,1`` -> [0, 1]."""
    if text.strip() == "all":
        return []
    try:
        ranks = [int(part) for part in text.split(",")]
    except ValueError:
        raise UsageError(f"--ranks {text!r}: give global ranks separated by commas (e.g. 0,1) or 'all'") from None
    if any(r < 0 for r in ranks) or len(set(ranks)) != len(ranks):
        raise UsageError(f"--ranks {text!r}: ranks must be distinct integers >= 0")
    return ranks


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.steps <= MAX_STEPS:
        raise UsageError(f"--steps {args.steps}: give 1 to {MAX_STEPS} steps")
    ranks = parse_ranks(args.ranks)
    job_dir = Path(args.job_dir)
    if not job_dir.exists():
        raise UsageError(
            f"{job_dir} does not exist yet: the job has not created its output dir (it is still starting), or this "
            f"is not its profiling output_dir. {CHECK_ON_DEMAND}"
        )
    if not job_dir.is_dir():
        raise UsageError(f"{job_dir} is not a directory; give the job's profiling output_dir")
    if not progress_path(job_dir).exists():
        raise UsageError(
            f"{progress_path(job_dir)} does not exist: the job under {job_dir} has not started training yet (rank 0 "
            f"writes it one poll interval after), or it runs without on-demand profiling. {CHECK_ON_DEMAND}"
        )
    try:
        progress = read_progress(job_dir)
    except ProtocolError as e:
        raise UsageError(str(e)) from None
    now = time.time()
    age = now - progress.written
    if progress.state == "finished":
        raise UsageError(f"the job under {job_dir} has finished (at step {progress.step}); nothing to profile")
    if age > max(FRESH_S, 5 * progress.poll_interval_s):
        raise UsageError(
            f"{progress_path(job_dir)} was last written {age:.0f} s ago: the job is not running (or hangs); "
            f"a running job rewrites it every {progress.poll_interval_s:g} s"
        )
    if progress.step is None or not progress.steps_per_s:
        raise UsageError("the job has not reported a step rate yet (it needs two steps); try again in a few seconds")
    outside = [r for r in ranks if r >= progress.world_size]
    if outside:
        raise UsageError(f"--ranks {args.ranks}: rank(s) {outside} outside the job's {progress.world_size} rank(s)")
    memory = args.memory
    if memory and progress.can_record_memory is False:
        print(
            "--memory: this job cannot record memory (rank 0 has no CUDA, and memory history records the CUDA "
            "caching allocator): the request asks for traces only"
        )
        memory = False
    window = [(progress.window[0], progress.window[1])] if progress.window else []
    try:  # a planted symlink on the way to the requests is refused here (own_dirs)
        taken = [(r.start, r.end) for r in valid_requests(job_dir)] + window
        start = plan_start(progress, now, taken, args.steps)
        req = publish_request(job_dir, start, start + args.steps, ranks, memory)
    except OSError as e:
        raise UsageError(f"cannot write the request under {job_dir}: {e.strerror or e}") from None
    seconds = (start - progress.step) / progress.steps_per_s - (now - (progress.step_time or now))
    named = ranks or list(range(progress.world_size))
    print(
        f"request {req.id}: ranks {named} profile steps {req.start}-{req.end - 1}"
        f"{' with a memory snapshot' if req.memory else ''}; the job was at step ~{progress.step}, "
        f"{progress.steps_per_s:.2f} steps/s, so it starts in ~{max(seconds, 0):.0f} s"
    )
    example = torch_trace_stem(named[0], req.start, req.end - 1, trigger=req.id, environ={}) + TORCH_TRACE_SUFFIX
    print(f"traces: {job_dir / TORCH_TRACE_DIR}/ (e.g. {example}); the job's log says if a rank ignored the request")
    return 0
