"""`bridge-plugins summary` over many rank files, and the cost of a long ``profile_ranks`` (issue 11, item 3).

Part 1, the analysis CLI at scale. Generates N rank trace files of a 10,000-rank job: copies of the
real ``job128_rank0`` fixture (one rank of a 128-rank NCCL job, 2 ProfilerSteps, 1.8 MB raw, 4.9 k
events; HolisticTraceAnalysis test data) with ``distributedInfo`` rewritten to rank r of 10,000,
named as the writer names them (``artifact_names.torch_trace_stem``) in ``<dir>/torch_profile/``.
Then runs ``python -m bridge_plugins summary DIR --json [--jobs N]`` in a fresh process per size (wall time;
peak RSS from ``wait4``, exact) and fits a line through the sizes, to extrapolate to 10,000 files.

Part 2, what 10,000 ranks in ``profile_ranks`` cost, today, as a plain list:
- the Script override argument ``profiling.profile_ranks=[...]`` (one argv string: Linux refuses
  one over MAX_ARG_STRLEN, 128 KiB, with E2BIG);
- the sbatch script NeMo Run renders for a Script and for a Partial with that selection
  (``exp.dryrun``, nothing submitted);
- the YAML a config file holds;
- ``ProfilingConfig(profile_ranks=...)`` validation, and the job side's ``profiles_rank`` lookup.

    nice .venv/bin/python -m benchmarks.analysis_many_ranks --sizes 100 300 1000
"""

from __future__ import annotations

import argparse
import gzip
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bridge_plugins.jobdir import names as artifact_names

SHARED = Path(os.environ.get("BRIDGE_SHARED") or Path(__file__).resolve().parents[2] / "shared")
FIXTURE = SHARED / "fixtures" / "gpu-traces" / "job128_rank0.json.gz"
HEADER = b'"distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 128}'
WORLD = 10_000
STEPS = (551, 552)  # the fixture's ProfilerStep numbers
MAX_ARG_STRLEN = 32 * 4096  # Linux: longest single argv/env string (include/uapi/linux/binfmts.h)


def generate(job_dir: Path, count: int) -> int:
    """Write ``count`` rank files under job_dir/torch_profile; returns their total raw (JSON) bytes."""
    raw = gzip.decompress(FIXTURE.read_bytes())
    assert raw.count(HEADER) == 1, f"{FIXTURE}: its distributedInfo is not the one this benchmark rewrites"
    out = job_dir / artifact_names.TORCH_TRACE_DIR
    out.mkdir(parents=True, exist_ok=True)
    total = 0
    for rank in range(count):
        header = b'"distributedInfo": {"backend": "nccl", "rank": %d, "world_size": %d}' % (rank, WORLD)
        body = raw.replace(HEADER, header)
        name = artifact_names.torch_trace_stem(rank, *STEPS, environ={}) + artifact_names.TORCH_TRACE_SUFFIX
        (out / name).write_bytes(gzip.compress(body, compresslevel=1))
        total += len(body)
    return total


def link_subset(src: Path, dst: Path, count: int) -> None:
    """dst holds (hard links to) the first ``count`` ranks of src: same bytes, no extra disk."""
    (dst / artifact_names.TORCH_TRACE_DIR).mkdir(parents=True)
    for rank in range(count):
        name = artifact_names.torch_trace_stem(rank, *STEPS, environ={}) + artifact_names.TORCH_TRACE_SUFFIX
        os.link(src / artifact_names.TORCH_TRACE_DIR / name, dst / artifact_names.TORCH_TRACE_DIR / name)


def measure(args: list[str], out_file: Path) -> tuple[float, int]:
    """Run ``python -m bridge_plugins ARGS`` in a fresh process, stdout to out_file: (wall s, peak RSS bytes)."""
    cmd = [sys.executable, "-m", "bridge_plugins", *args]
    with open(out_file, "wb") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0 or err.strip():
        raise SystemExit(f"{' '.join(cmd)} failed or skipped files:\n{err[-2000:]}")
    return wall, usage.ru_maxrss * 1024


def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares line y = a + b x."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=False)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def analysis_part(sizes: list[int], work: Path, jobs: list[str]) -> None:
    full = work / "job"
    t0 = time.perf_counter()
    raw_total = generate(full, max(sizes))
    gz_total = sum(p.stat().st_size for p in (full / artifact_names.TORCH_TRACE_DIR).iterdir())
    print(
        f"generated {max(sizes)} rank files in {time.perf_counter() - t0:.1f} s: "
        f"{raw_total / max(sizes) / 1e6:.2f} MB raw, {gz_total / max(sizes) / 1e3:.0f} kB gzip (level 1) each"
    )
    print(f"{'files':>6} {'raw GB':>7} {'wall s':>7} {'ms/file':>8} {'MB/s':>6} {'peak RSS MB':>11} {'JSON MB':>8}")
    walls, rsss = [], []
    for n in sizes:
        job = full if n == max(sizes) else work / f"job{n}"
        if job != full:
            link_subset(full, job, n)
        wall, rss = measure(["summary", str(job), "--json", *jobs], work / f"summary{n}.json")
        out_bytes = (work / f"summary{n}.json").stat().st_size
        raw = raw_total / max(sizes) * n
        walls.append(wall)
        rsss.append(rss / 1e6)
        print(
            f"{n:>6} {raw / 1e9:>7.2f} {wall:>7.1f} {1000 * wall / n:>8.1f} {raw / 1e6 / wall:>6.1f} "
            f"{rss / 1e6:>11.0f} {out_bytes / 1e6:>8.1f}"
        )
    a, b = fit([float(n) for n in sizes], walls)
    ra, rb = fit([float(n) for n in sizes], rsss)
    print(f"fit: wall = {a:.1f} s + {1000 * b:.1f} ms/file   peak RSS = {ra:.0f} MB + {1000 * rb:.1f} kB/file")
    print(
        f"extrapolated to {WORLD} files: wall {a + b * WORLD:.0f} s ({(a + b * WORLD) / 60:.1f} min), "
        f"peak RSS {ra + rb * WORLD:.0f} MB"
    )
    html = work / "report.html"
    wall, rss = measure(["report", str(full), "-o", str(html), *jobs], work / "report.out")
    lines = subprocess.run(
        [sys.executable, "-m", "bridge_plugins", "summary", str(full), *jobs], capture_output=True, text=True
    ).stdout.count("\n")
    print(
        f"report (HTML) of {max(sizes)} files: {wall:.1f} s, peak RSS {rss / 1e6:.0f} MB, "
        f"page {html.stat().st_size / 1e6:.2f} MB; terminal summary {lines} lines"
    )


def ranks_part(work: Path) -> None:
    import yaml

    from bridge_plugins import ProfilingConfig
    from bridge_plugins.config.override_values import override_value

    ranks = list(range(WORLD))
    arg = "profiling.profile_ranks=" + override_value(ranks)
    print(f"\nprofile_ranks = all {WORLD} ranks listed one by one (the worst case; [] already means all):")
    print(
        f"  Script override argument: {len(arg):,} bytes (Linux MAX_ARG_STRLEN {MAX_ARG_STRLEN:,}: "
        f"{'fits' if len(arg) < MAX_ARG_STRLEN else 'TOO LONG, execve fails with E2BIG'})"
    )
    per_rank = (len(override_value(list(range(10_000, 100_000)))) - 2) / 90_000
    print(
        f"  ranks 10,000-99,999 take {per_rank:.2f} bytes each in the override: one argument reaches "
        f"{MAX_ARG_STRLEN // 1024} KiB at about {int(WORLD + (MAX_ARG_STRLEN - len(arg)) / per_rank):,} ranks"
    )
    print(
        f"  YAML: block list {len(yaml.safe_dump({'profile_ranks': ranks})):,} bytes, "
        f"flow list {len(yaml.safe_dump({'profile_ranks': ranks}, default_flow_style=True)):,} bytes"
    )
    for label, value in (
        ("8 ranks [0..7]", list(range(8))),
        (f"{WORLD} ranks", ranks),
        ("one per node, 1,250 ranks", list(range(0, WORLD, 8))),
    ):
        best = float("inf")
        for _ in range(20):
            t0 = time.perf_counter()
            cfg = ProfilingConfig(use_pytorch_profiler=True, profile_ranks=value)
            best = min(best, time.perf_counter() - t0)
        t0 = time.perf_counter()
        for r in range(0, WORLD, 97):
            cfg.profiles_rank(r)
        lookup = (time.perf_counter() - t0) / len(range(0, WORLD, 97))
        print(
            f"  ProfilingConfig validation, {label}: {1000 * best:.2f} ms (best of 20); "
            f"profiles_rank(r) once per process: {1e6 * lookup:.1f} us"
        )
    for kind in ("script", "partial"):
        script = sbatch_script(kind, ranks, work)
        base = sbatch_script(kind, [0], work)
        print(f"  sbatch script, {kind}: {len(script):,} bytes with {WORLD} ranks listed, {len(base):,} with [0]")


def sbatch_script(kind: str, ranks: list[int], work: Path) -> str:
    """The sbatch script NeMo Run renders (dryrun) for the recipe on 1,250 nodes x 8 with these ranks."""
    import contextlib
    import io
    import warnings

    import nemo_run as run

    from bridge_plugins import PyTorchProfilerPlugin
    from bridge_plugins.plugins.nemo_run_compat import dryrun_request
    from recipes.tiny_gpt import tiny_gpt_recipe, tiny_gpt_script

    base = work / f"nemo_{kind}_{len(ranks)}"
    executor = run.SlurmExecutor(
        account="a",
        partition="p",
        nodes=WORLD // 8,
        ntasks_per_node=8,
        tunnel=run.LocalTunnel(job_dir=str(base / "experiments")),
        launcher=run.Torchrun(),
    )
    task = tiny_gpt_script() if kind == "script" else tiny_gpt_recipe()
    plugin = PyTorchProfilerPlugin(profile_step_start=3, profile_step_end=5, profile_ranks=ranks)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):  # NeMo Run's banners
        warnings.simplefilter("ignore")
        with run.Experiment("ranks", base_dir=str(base), enable_goodbye_message=False, log_level="ERROR") as exp:
            exp.add(task, executor=executor, plugins=[plugin], name="tiny_gpt")
            exp.dryrun(log=False)
            return dryrun_request(exp.jobs[0]).materialize()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--sizes", type=int, nargs="+", default=[100, 300, 1000], help="rank file counts (default 100 300 1000)"
    )
    p.add_argument("--work", type=Path, default=None, help="scratch directory (default: a temporary one, removed)")
    p.add_argument("--skip-analysis", action="store_true", help="only part 2 (profile_ranks figures)")
    p.add_argument("--jobs", help="passed to summary and report as --jobs (default: theirs, the usable CPUs)")
    args = p.parse_args()
    print(f"# python -m benchmarks.analysis_many_ranks {' '.join(sys.argv[1:])}")
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, "
        f"{len(os.sched_getaffinity(0))} usable CPUs, load average {os.getloadavg()[0]:.1f}, "
        f"Python {platform.python_version()}"
    )
    work = args.work or Path(tempfile.mkdtemp(prefix="many_ranks_"))
    try:
        if not args.skip_analysis:
            analysis_part(sorted(args.sizes), work, ["--jobs", args.jobs] if args.jobs else [])
        ranks_part(work)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
