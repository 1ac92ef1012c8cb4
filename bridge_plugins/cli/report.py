"""``bridge-plugins report PATH... [-o report.html] [--baseline OTHER...]``: one HTML file, readable offline.

Step times, GPU time breakdown, top operators and kernels, stragglers and memory, with the
comparison to a baseline run when one is given. Files that cannot be read are listed in the page
and on stderr; exit 2 when nothing at all could be read. An existing output file is replaced only
with ``--force``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from bridge_plugins.cli import UsageError, add_paths, add_top, add_workers, analysis_starts, top_rows, workers
from bridge_plugins.cli.summary import print_problems
from bridge_plugins.jobdir.scan import NothingToRead


def add_parser(sub) -> None:
    p = sub.add_parser(
        "report",
        help="one self-contained HTML report (no network needed to open it)",
        description="Write one self-contained HTML file that opens offline: step times, GPU time breakdown, top "
        "operators and kernels, stragglers and memory, and the comparison with a --baseline run. An existing "
        "output file is replaced only with --force.",
    )
    # "*": `report --baseline X JOB` leaves no PATH after --baseline took both; run() sorts that out
    add_paths(p, nargs="*")
    p.add_argument("-o", "--output", default="report.html", help="HTML file to write (default: report.html)")
    p.add_argument("--force", action="store_true", help="replace the output file if it exists")
    p.add_argument(
        "--baseline",
        nargs="+",
        metavar="OTHER",
        help="a baseline run (job directory or files) to compare with; it takes every path after it",
    )
    add_top(p, "rows in the operator and kernel tables")
    add_workers(p)
    p.set_defaults(run=run)


def run_and_baseline(args) -> tuple:
    """(paths, baseline), with ``--baseline X JOB`` (the baseline first) read as ``JOB --baseline X``."""
    if args.paths:
        return args.paths, args.baseline
    if not args.baseline:
        raise UsageError("give the run's job directory or files: report JOB [--baseline OTHER_JOB]")
    if len(args.baseline) == 1:
        raise UsageError(
            f"no run to report: --baseline took {args.baseline[0]}; give the run's job directory or files first: "
            f"report JOB --baseline {args.baseline[0]}"
        )
    if len(args.baseline) > 2:  # which of them is the run cannot be told apart
        taken = " ".join(args.baseline)
        raise UsageError(
            f"no run to report: --baseline took every path after it ({taken}); put the run's paths first: "
            f"report RUN... --baseline OTHER..."
        )
    baseline, run = args.baseline
    print(
        f"bridge-plugins report: note: --baseline takes every path after it; read as: report {run} --baseline {baseline}",
        file=sys.stderr,
    )
    return [run], [baseline]


def run(args) -> int:
    from bridge_plugins.analysis.trace.read_ranges import reading_ahead  # here, not above: see cli/summary.py

    out = Path(args.output)
    top = top_rows(args)
    paths, baseline = run_and_baseline(args)
    if out.is_dir():
        raise UsageError(f"-o {out}: is a directory; give a file name such as {out / 'report.html'}")
    if not out.parent.is_dir():
        raise UsageError(f"-o {out}: directory {out.parent} does not exist")
    existed = out.exists() or out.is_symlink()
    if existed and not args.force:
        raise UsageError(f"-o {out}: exists; add --force to replace it")
    w = workers(args)
    # a lone trace (no baseline) is read in ranges while the page's modules import
    with reading_ahead([] if baseline else paths, w):
        from bridge_plugins.analysis.page import build
        from bridge_plugins.analysis.report.html import write_report

        analysis_starts()
        try:
            html, skipped = build(paths, baseline, top=top, workers=w)
        except NothingToRead as e:
            raise UsageError(str(e)) from None
    try:
        write_report(html, out, replace=args.force)
    except FileExistsError:
        raise UsageError(f"-o {out}: exists; add --force to replace it") from None
    except OSError as e:
        raise UsageError(f"-o {out}: cannot write: {e.strerror or e}") from None
    replaced = "replaced the file that was there; " if existed else ""
    print(f"report: {out} ({replaced}{len(html.encode()) / 1024:.0f} KiB, opens offline)")
    print_problems(skipped, "report")
    return 0
