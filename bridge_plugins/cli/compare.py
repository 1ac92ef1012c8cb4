"""``bridge-plugins compare BASE NEW [--json] [--top N]``: step time, op and kernel deltas, both GPU breakdowns.

BASE and NEW are each a job directory or a trace file. Exit status 2 when either has nothing
readable; files skipped are listed on stderr and in the JSON's ``problems``.
"""

from __future__ import annotations

from bridge_plugins.cli import UsageError, add_json, add_top, add_workers, analysis_starts, top_rows, workers
from bridge_plugins.cli.summary import print_problems
from bridge_plugins.jobdir.scan import NothingToRead


def add_parser(sub) -> None:
    p = sub.add_parser(
        "compare",
        help="what changed between two runs",
        description="Two runs (job directories or traces): step-time delta, both GPU breakdowns, "
        "op and kernel regressions and improvements.",
    )
    p.add_argument("base", metavar="BASE", help="the reference run: a job directory or a trace file")
    p.add_argument("new", metavar="NEW", help="the run to compare with it")
    add_json(p, "the figures", "docs/reading-a-profile.md#compare")
    add_top(p, "rows per regressions/improvements table")
    add_workers(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from bridge_plugins.analysis.jsonable import dumps  # here, not above: see cli/summary.py
    from bridge_plugins.analysis.run_compare import compare

    top = top_rows(args)
    analysis_starts()
    try:
        c = compare([args.base], [args.new], top=top, workers=workers(args))
    except NothingToRead as e:
        raise UsageError(str(e)) from None
    if args.json:
        print(dumps(c))
    else:
        from bridge_plugins.analysis.text.run_compare import print_compare
        from bridge_plugins.analysis.text.terminal import console

        print_compare(c, console())
    print_problems(c.problems, "compare")
    return 0
