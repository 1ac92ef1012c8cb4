"""``bridge-plugins memory SNAPSHOT [--compare OTHER] [--json]``: read CUDA memory snapshots.

Reads the pickles that ``torch.cuda.memory._dump_snapshot`` writes (the controller's included)
without running code from them (see bridge_plugins.analysis.memory.loader).
"""

from __future__ import annotations

import json
from collections.abc import Callable


def add_parser(sub) -> None:
    p = sub.add_parser(
        "memory",
        help="peaks, allocations by site, leak candidates and segments of a CUDA memory snapshot",
        description="Summarize a CUDA memory snapshot (torch.cuda.memory._dump_snapshot pickle), or compare two.",
    )
    p.add_argument("snapshot", help="snapshot pickle (e.g. memory_snapshot_0.pickle)")
    p.add_argument("--compare", metavar="OTHER", help="a second snapshot: show OTHER minus SNAPSHOT")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.set_defaults(run=run)


def run(args) -> int:
    from bridge_plugins.analysis.memory.compare import compare_snapshot_figures
    from bridge_plugins.analysis.memory.snapshot import snapshot_figures
    from bridge_plugins.analysis.text.memory import render_compare, render_snapshot_figures

    if args.compare:  # a snapshot that cannot be read: AnalysisInputError, one line and exit 2 (cli.main)
        result = compare_snapshot_figures(snapshot_figures(args.snapshot, None), snapshot_figures(args.compare, None))
        text: Callable[[dict], str] = render_compare
    else:
        result, text = snapshot_figures(args.snapshot), render_snapshot_figures
    print(json.dumps(result, indent=1) if args.json else text(result))
    return 0
