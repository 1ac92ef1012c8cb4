"""Run mutmut on one core module against the fast tests that cover it (scripts/mutation_modules.toml).

The repository's tracked files are copied to a temporary directory whose pyproject.toml gets a
[tool.mutmut] section for the module (mutmut reads its settings only from there), so the working
tree is never touched. Prints mutmut's per-mutant results and the score: killed / (all but skipped).
With MUTATION_DIR set, the copy is made there and kept, to look at survivors (``mutmut show NAME``;
one entry at a time then). ``--all`` runs every entry, one after another; ``--changed REV`` those
whose files to mutate differ from REV (the scheduled lane: docs/reliability.md, "Mutation testing").
A run fails below MIN_SCORE % killed. BRIDGE_SHARED defaults to the checkout's ../shared (fixtures).
An entry's optional ``run`` (mutant name patterns) restricts the run to those functions' mutants;
``isolation`` is mutmut's process_isolation (default "fork"); ``args``, more pytest arguments (a
marker selection: ``["-m", "not slow"]``).
``--save`` also writes the results and the score to benchmarks/results/mutation_MODULE.txt.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
MIN_SCORE = 90  # percent killed below which a run fails (docs/reliability.md lists every survivor)


def main(argv: list[str]) -> int:
    modules = tomllib.loads((ROOT / "scripts/mutation_modules.toml").read_text())
    save = "--save" in argv
    argv = [a for a in argv if a != "--save"]
    if argv[:1] == ["--changed"] and len(argv) == 2:
        names = _touched(modules, argv[1])
        print(f"[mutation] entries whose files changed since {argv[1]}: {', '.join(names) or 'none'}", flush=True)
    elif argv == ["--all"]:
        names = list(modules)
    elif argv and all(a in modules for a in argv):
        names = argv
    else:
        print(
            f"usage: scripts/mutation.sh [--save] MODULE... | --all | --changed REV   (MODULE: {', '.join(modules)})",
            file=sys.stderr,
        )
        return 2
    if len(names) > 1 and os.environ.get("MUTATION_DIR"):
        print("scripts/mutation.sh: MUTATION_DIR keeps one entry's copy; name one MODULE", file=sys.stderr)
        return 2
    os.environ.setdefault("BRIDGE_SHARED", str(ROOT.parent / "shared"))  # the fixtures, from the copy too
    return max([_run(name, modules[name], save) for name in names], default=0)


def _touched(modules: dict, rev: str) -> list[str]:
    """The entries with a file to mutate that differs from ``rev`` (committed or not)."""
    out = subprocess.run(["git", "diff", "--name-only", rev], cwd=ROOT, capture_output=True, text=True, check=True)
    changed = set(out.stdout.split())
    return [name for name, entry in modules.items() if changed & set(entry["mutate"])]


def _run(name: str, entry: dict, save: bool) -> int:
    """Run one entry; 1 if mutmut failed or fewer than MIN_SCORE % of its mutants were killed."""
    keep = os.environ.get("MUTATION_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=False)
    with contextlib.nullcontext(keep) if keep else tempfile.TemporaryDirectory(prefix="mutation-") as tmp:
        files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["cp", "--parents", "-t", tmp, *files.decode().split("\0")[:-1]], cwd=ROOT, check=True)
        # a git checkout, as the tests expect (NeMo Run's Slurm packager asks git for the top level)
        git = ["git", "-c", "user.name=mutation", "-c", "user.email=mutation@localhost"]
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "copy for mutation testing"]):
            subprocess.run([*git, *args], cwd=tmp, check=True)
        pyproject = Path(tmp, "pyproject.toml")
        pytest_args = ["-p", "no:cacheprovider", "-x", "-q", *entry.get("args", [])]
        section = "\n[tool.mutmut]\n" + "\n".join(
            [
                'source_paths = ["bridge_plugins"]',
                f"only_mutate = {entry['mutate']!r}".replace("'", '"'),
                'also_copy = ["recipes", "benchmarks"]',
                f"pytest_add_cli_args_test_selection = {entry['tests']!r}".replace("'", '"'),
                f"pytest_add_cli_args = {pytest_args!r}".replace("'", '"'),
                # "forkserver" where the tests run torch: forking the process that ran them let mutants
                # pass as 'survived' that failed their tests when run alone
                f'process_isolation = "{entry.get("isolation", "fork")}"',
                "timeout_multiplier = 60.0",  # 15 (the default) timed out sound mutants on a loaded machine
            ]
        )
        pyproject.write_text(pyproject.read_text() + section + "\n")
        run = subprocess.run([sys.executable, "-m", "mutmut", "run", *entry.get("run", [])], cwd=tmp)
        results = subprocess.run(
            [sys.executable, "-m", "mutmut", "results", "--all", "true"], cwd=tmp, capture_output=True, text=True
        ).stdout
        lines = [line.strip() for line in results.splitlines() if ":" in line]
        checked = [line for line in lines if line.rsplit(":", 1)[1].strip() not in ("skipped", "not checked")]
        killed = sum(line.endswith(": killed") for line in checked)
        score = f"[mutation] {name}: {killed} of {len(checked)} mutants killed ({100 * killed / max(1, len(checked)):.0f} %)"
        report = "\n".join([*checked, score]) + "\n"
        print(report, end="")
        if save:
            Path(ROOT, "benchmarks/results", f"mutation_{name}.txt").write_text(report)
        return run.returncode or int(100 * killed < MIN_SCORE * len(checked))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
