"""``bridge-plugins summary PATH... [--json] [--top N]``: what a job's traces say, per rank and across ranks.

Exit status: 0 when at least one file was summarized (files that could not be read are listed, one
line each, on stderr and in the JSON's ``problems``); 2 when nothing could be read.
"""

from __future__ import annotations

import sys

from bridge_plugins.cli import UsageError, add_json, add_paths, add_top, add_workers, analysis_starts, top_rows, workers
from bridge_plugins.jobdir.scan import NothingToRead


def add_parser(sub) -> None:
    p = sub.add_parser(
        "summary",
        help="step times, GPU time breakdown, top ops and kernels, stragglers",
        description="Per rank: steps and step times, GPU time split, top CPU operators and GPU "
        "kernels; across ranks: stragglers and who waits on them.",
    )
    add_paths(p)
    add_json(p, "the figures", "docs/analysis-schema.md")
    p.add_argument(
        "--timelines",
        action="store_true",
        help="with --json: include each rank's step timelines (every bar the report draws; large)",
    )
    add_top(p, "rows in the operator and kernel tables")
    add_workers(p)
    p.set_defaults(run=run)


def print_problems(problems, command: str) -> None:  # schema.Problem rows
    for x in problems:
        print(f"bridge-plugins {command}: skipped {x.file}: {x.error}", file=sys.stderr)


def run(args) -> int:
    # imported here, not above: the parser is built for every command, and --json needs no rich;
    # the range reader first: a lone trace's workers read while the rest imports (trace/read_ranges.py)
    from bridge_plugins.analysis.trace.read_ranges import reading_ahead

    top = top_rows(args)
    w = workers(args)
    with reading_ahead(args.paths, w) as ahead:
        from bridge_plugins.analysis.jsonable import dumps
        from bridge_plugins.analysis.pipeline import summarize

        if ahead and not args.json:  # the renderer (rich) while the workers read; else after the
            import bridge_plugins.analysis.text.summary  # noqa: F401  # analyses, its memory not beside theirs
        analysis_starts()
        try:
            s = summarize(args.paths, top=top, workers=w, timelines=args.json and args.timelines)
        except NothingToRead as e:
            raise UsageError(str(e)) from None
    if args.json:
        print(dumps(s))
    else:
        from bridge_plugins.analysis.text.summary import print_summary
        from bridge_plugins.analysis.text.terminal import console

        print_summary(s, console())
    print_problems(s.problems, "summary")
    return 0
