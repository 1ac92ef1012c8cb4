"""``bridge-plugins diagnose PATH... [--json]``: what is wrong, ranked, with evidence and what to try.

Exit status: 0 when at least one trace was read (whether or not anything was found); 2 when
nothing could be read. ``--json`` prints ``{"schema_version", "findings": [...]}``.
"""

from __future__ import annotations

from bridge_plugins.analysis.findings import run as findings  # KINDS: the one list of finding kinds
from bridge_plugins.cli import UsageError, add_json, add_paths, add_workers, analysis_starts, workers
from bridge_plugins.cli.summary import print_problems
from bridge_plugins.jobdir.scan import NothingToRead


def add_parser(sub) -> None:
    p = sub.add_parser(
        "diagnose",
        help="ranked findings: why steps are slow and what to try",
        description=f"Ranked findings ({', '.join(findings.KINDS)}; docs/diagnose.md) with the time at stake "
        "per step, the evidence and what to try.",
    )
    add_paths(p)
    add_json(p, '{"schema_version", "findings": [...]}', "docs/analysis-schema.md#finding")
    add_workers(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from bridge_plugins.analysis.trace.read_ranges import reading_ahead  # here, not above: see cli/summary.py

    w = workers(args)
    with reading_ahead(args.paths, w) as ahead:
        from bridge_plugins.analysis.jsonable import dumps
        from bridge_plugins.analysis.pipeline import SCHEMA_VERSION, diagnose

        if ahead and not args.json:  # the renderer (rich) while the workers read: see cli/summary.py
            import bridge_plugins.analysis.text.findings  # noqa: F401
        analysis_starts()
        try:
            s = diagnose(args.paths, workers=w)
        except NothingToRead as e:
            raise UsageError(str(e)) from None
    if args.json:
        print(dumps({"schema_version": SCHEMA_VERSION, "findings": s.findings}))
    else:
        from rich.text import Text

        from bridge_plugins.analysis.text.findings import advice, evidence, findings_table
        from bridge_plugins.analysis.text.terminal import console

        out = console()
        out.print(findings_table(s.findings))
        for line in [*evidence(s.findings), *advice(s.findings)]:
            out.print(line)
        if not s.traces_read:
            out.print(Text("no traces read: findings need a trace", style="yellow"))
    print_problems(s.problems, "diagnose")
    return 0
