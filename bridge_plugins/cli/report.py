"""``bridge-plugins report PATH... [-o report.html] [--baseline OTHER...]``: one HTML file, readable offline.

Step times, GPU time breakdown, top operators and kernels, stragglers and memory, with the
comparison to a baseline run when one is given. Files that cannot be read are listed in the page
and on stderr; exit 2 when nothing at all could be read.
"""

from __future__ import annotations

from pathlib import Path

from bridge_plugins.cli import UsageError, add_top, add_workers, top_rows, workers


def add_parser(sub) -> None:
    p = sub.add_parser(
        "report",
        help="one self-contained HTML report (no network needed to open it)",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="a job directory, or trace and snapshot files")
    p.add_argument("-o", "--output", default="report.html", help="HTML file to write (default: report.html)")
    p.add_argument(
        "--baseline", nargs="+", metavar="OTHER", help="a baseline run (job directory or files) to compare with"
    )
    add_top(p, "rows in the operator and kernel tables")
    add_workers(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from bridge_plugins.analysis.report.html import build, write_report
    from bridge_plugins.cli.summary import print_problems
    from bridge_plugins.jobdir.scan import NothingToRead

    out = Path(args.output)
    top = top_rows(args)
    if out.is_dir():
        raise UsageError(f"-o {out}: is a directory; give a file name such as {out / 'report.html'}")
    if not out.parent.is_dir():
        raise UsageError(f"-o {out}: directory {out.parent} does not exist")
    try:
        html, skipped = build(args.paths, args.baseline, top=top, workers=workers(args))
    except NothingToRead as e:
        raise UsageError(str(e)) from None
    try:
        write_report(html, out)
    except OSError as e:
        raise UsageError(f"-o {out}: cannot write: {e.strerror or e}") from None
    print(f"report: {out} ({len(html.encode()) / 1024:.0f} KiB, opens offline)")
    print_problems(skipped, "report")
    return 0
