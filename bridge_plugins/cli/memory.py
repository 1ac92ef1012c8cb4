"""``bridge-plugins memory PATH [--compare OTHER] [--json]``: read CUDA memory snapshots.

Reads the pickles that ``torch.cuda.memory._dump_snapshot`` writes (the controller's included)
without running code from them (see bridge_plugins.analysis.memory.loader). PATH and OTHER are
each a snapshot file or a job directory that holds one.
"""

from __future__ import annotations

from pathlib import Path

from bridge_plugins.cli import UsageError, add_json, add_paths, analysis_starts
from bridge_plugins.jobdir.scan import NothingToRead, find_inputs


def add_parser(sub) -> None:
    p = sub.add_parser(
        "memory",
        help="peaks, allocations by site, leak candidates and segments of a CUDA memory snapshot",
        description="Summarize a CUDA memory snapshot (torch.cuda.memory._dump_snapshot pickle), or compare two. "
        "A job directory stands for the one snapshot in it.",
    )
    add_paths(p, nargs=None)
    p.add_argument("--compare", metavar="OTHER", help="a second snapshot (or job directory): show OTHER minus PATH")
    add_json(p, "the figures", "docs/reading-a-profile.md#memory")
    p.set_defaults(run=run)


def snapshot_in(path: str) -> str:
    """The snapshot ``path`` names: the file itself, or the one snapshot of a job directory.

    A missing path is worded as ``summary`` words it (one scan of a job directory: jobdir.scan)."""

    if Path(path).is_file():  # any file: the loader says whether it is a snapshot
        return path
    try:
        snapshots = find_inputs([path]).snapshots
    except NothingToRead as e:
        if Path(path).is_dir():
            raise UsageError(f"{path}: no memory snapshot (.pickle) in this directory") from None
        raise UsageError(str(e)) from None
    if not snapshots:
        raise UsageError(f"{path}: no memory snapshot (.pickle) in this directory")
    if len(snapshots) > 1:
        raise UsageError(f"{path}: {len(snapshots)} memory snapshots; name one: {', '.join(map(str, snapshots))}")
    return str(snapshots[0])


def run(args) -> int:
    from bridge_plugins.analysis.jsonable import dumps
    from bridge_plugins.analysis.memory.snapshot import snapshot_figures
    from bridge_plugins.analysis.memory.snapshot_diff import compare_snapshot_figures
    from bridge_plugins.analysis.text.memory import render_compare, render_snapshot_figures

    analysis_starts()
    snapshot = snapshot_in(args.paths)
    if args.compare:  # a snapshot that cannot be read: AnalysisInputError, one line and exit 2 (cli.main)
        other = snapshot_in(args.compare)
        comparison = compare_snapshot_figures(snapshot_figures(snapshot, None), snapshot_figures(other, None))
        print(dumps(comparison) if args.json else render_compare(comparison))
        return 0
    figures = snapshot_figures(snapshot)
    print(dumps(figures) if args.json else render_snapshot_figures(figures))
    return 0
