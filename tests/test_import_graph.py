"""No import cycle among the modules of ``bridge_plugins``, through any import (also inside a
function or under ``TYPE_CHECKING``); a module of ours imported inside a function or under
``TYPE_CHECKING`` only where ``FUNCTION_LEVEL`` or ``TYPE_ONLY`` says why: docs/architecture.md."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.import_graph import Import, cycles, imports
from tests.support import clean_env

SNAPSHOTS_ONLY = (
    "only a summary with snapshots reads them: a trace's summary never imports the snapshot readers (~10 ms)"
)
FUNCTION_LEVEL = {
    ("bridge_plugins.analysis.parallel", "bridge_plugins.analysis.ray_map"): (
        "ray_map imports Ray, which only --ray-address needs (seconds to import); ray_map imports not parallel"
    ),
    ("bridge_plugins.runtime", "bridge_plugins.runtime.controller"): (
        "the package's lazy name (its type under TYPE_CHECKING): importing bridge_plugins.runtime never imports torch"
    ),
    ("bridge_plugins.config", "bridge_plugins.config.profiling"): (
        "the package's lazy name (its type under TYPE_CHECKING): the CLI imports config.errors without the config"
    ),
    ("bridge_plugins.analysis.pipeline", "bridge_plugins.analysis.memory.results"): SNAPSHOTS_ONLY,
    ("bridge_plugins.analysis.pipeline", "bridge_plugins.analysis.memory.snapshot"): SNAPSHOTS_ONLY,
    ("bridge_plugins.analysis.text.summary", "bridge_plugins.analysis.text.memory"): SNAPSHOTS_ONLY,
}
"""(importer, imported): why that import is inside a function."""
LIGHT_TYPES = "a type only: the Summary's types and the findings load no analyzer (numpy) for the CLI's parser"
TYPE_ONLY = {
    ("bridge_plugins", "bridge_plugins.config.profiling"): "ProfilingConfig is a lazy name of the package (_LAZY)",
    ("bridge_plugins.analysis.schema", "bridge_plugins.analysis.analyzers.all"): LIGHT_TYPES,
    ("bridge_plugins.analysis.schema", "bridge_plugins.analysis.memory.results"): (
        "a type only: a trace's summary never imports the snapshot readers"
    ),
    ("bridge_plugins.analysis.findings.host_bound", "bridge_plugins.analysis.analyzers.idle"): LIGHT_TYPES,
    ("bridge_plugins.analysis.findings.step_variance", "bridge_plugins.analysis.analyzers.step_detail"): LIGHT_TYPES,
}
"""(importer, imported): why that import is under ``TYPE_CHECKING`` (never to dodge a cycle: the
cycle test counts these imports too)."""
COMMAND_READERS = "a subcommand imports its readers when it runs: --help and trigger never import numpy"
"""Why a module of ``bridge_plugins.cli`` may import analysis inside a function."""


def _allowed(i: Import) -> bool:
    if (i.importer, i.imported) in FUNCTION_LEVEL:
        return True
    return i.importer.startswith("bridge_plugins.cli.") and i.imported.startswith("bridge_plugins.analysis")


def test_no_import_cycle() -> None:
    edges: dict[str, set[str]] = {}
    for i in imports():
        edges.setdefault(i.importer, set()).add(i.imported)
    assert cycles(edges) == []


def test_no_function_level_import_of_our_modules() -> None:
    found = [f"{i.importer}:{i.line} imports {i.imported}" for i in imports() if i.in_function and not _allowed(i)]
    assert found == []


def test_type_checking_imports_of_ours_only_where_named():
    found = [
        f"{i.importer}:{i.line} imports {i.imported}"
        for i in imports()
        if i.type_checking and (i.importer, i.imported) not in {**FUNCTION_LEVEL, **TYPE_ONLY}
    ]
    assert found == []


def test_the_allow_list_names_imports_that_exist() -> None:
    """An entry whose import is gone is removed, so the list stays short and true."""
    present = {(i.importer, i.imported) for i in imports() if i.in_function or i.type_checking}
    assert sorted((set(FUNCTION_LEVEL) | set(TYPE_ONLY)) - present) == []


def test_the_graph_sees_every_kind_of_import() -> None:
    """The walk itself: a cycle through a function-level and a TYPE_CHECKING import is found."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    kinds = {(i.in_function, i.type_checking) for i in imports() if i.importer == "bridge_plugins.cli.summary"}
    assert (True, False) in kinds


def test_the_cli_parser_loads_no_reader():
    """What COMMAND_READERS says: ``--help`` (every subcommand's parser built) imports neither numpy,
    rich nor the analysis, so the allowance is needed."""
    code = (
        "import sys, contextlib, io\nfrom bridge_plugins.cli import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()): main(['--help'])\n"
        "print(sorted(m for m in ('numpy', 'rich', 'bridge_plugins.analysis.pipeline') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=clean_env(), capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def test_the_range_reader_loads_no_numpy():
    """A read in ranges forks its workers once ``read_ranges`` is imported, before the command
    imports the analyses: numpy (~30 ms) is imported after the fork, by this process alone, where
    the columns are read back or a part merged (spill.py, merge.py)."""
    code = (
        "import sys\nimport bridge_plugins.cli, bridge_plugins.analysis.trace.read_ranges\n"
        "print(sorted(m for m in ('numpy', 'bridge_plugins.analysis.pipeline') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=clean_env(), capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def test_a_named_command_builds_and_imports_its_own_parser_only():
    """``bridge-plugins summary FILE`` parses with summary's parser alone: no other command's module
    (diagnose's imports the findings, trigger's the job side's sockets), nor the config's rules
    (``bridge_plugins`` resolves ProfilingConfig on first use), before a lone trace's read starts."""
    code = (
        "import sys\nfrom bridge_plugins.cli import build_parser, named_command\n"
        "argv = ['summary', '--json', 'x.json']\n"
        "args = build_parser(named_command(argv)).parse_args(argv)\n"
        "print(args.command, args.json, args.paths)\n"
        "print(sorted(m for m in sys.modules if m.startswith(('bridge_plugins.cli.', 'bridge_plugins.config.'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=clean_env(), capture_output=True, text=True, timeout=60)
    assert out.stdout.splitlines() == [
        "summary True ['x.json']",
        "['bridge_plugins.cli.ctrl_c', 'bridge_plugins.cli.suggest', 'bridge_plugins.cli.summary', "
        "'bridge_plugins.config.errors']",
    ], out.stderr


def test_anything_but_a_command_name_gets_every_commands_parser():
    from bridge_plugins.cli import SUBCOMMANDS, build_parser, named_command

    assert [named_command(a) for a in (["diagnose", "x"], ["--help"], ["sumary"], [])] == ["diagnose", None, None, None]
    choices = next(a for a in build_parser()._subparsers._group_actions).choices
    assert list(choices) == SUBCOMMANDS
    only = next(a for a in build_parser("memory")._subparsers._group_actions).choices
    assert list(only) == ["memory"]


def test_a_traces_summary_loads_no_snapshot_reader(tmp_path):
    """What SNAPSHOTS_ONLY says: ``summary`` of a trace (tables and --json) imports none of the
    memory modules (~10 ms of a command that reads a trace in under a second)."""
    trace = tmp_path / "rank0.json"
    step = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 5}
    trace.write_text(json.dumps({"traceEvents": [step]}))
    for flags in ([], ["--json"]):
        code = (
            "import sys, contextlib, io\nfrom bridge_plugins.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()) as out: code = main(['summary', *{flags!r}, {str(trace)!r}])\n"
            "print(code, 'Profiler' in out.getvalue() or 'steps' in out.getvalue())\n"
            "print(sorted(m for m in sys.modules if '.memory' in m and m.startswith('bridge_plugins')))"
        )
        out = subprocess.run([sys.executable, "-c", code], env=clean_env(), capture_output=True, text=True, timeout=60)
        assert out.stdout.splitlines() == ["0 True", "[]"], out.stderr
