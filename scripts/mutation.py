"""Run mutmut on one core module against the fast tests that cover it (scripts/mutation_modules.toml).

The repository's tracked files are copied to a temporary directory whose pyproject.toml gets a
[tool.mutmut] section for the module (mutmut reads its settings only from there), so the working
tree is never touched. Prints mutmut's per-mutant results and the score: killed / (all but skipped).
With MUTATION_DIR set, the copy is made there and kept, to look at survivors (``mutmut show NAME``).
An entry's optional ``run`` (mutant name patterns) restricts the run to those functions' mutants;
``isolation`` is mutmut's process_isolation (default "fork").
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


def main(argv: list[str]) -> int:
    modules = tomllib.loads((ROOT / "scripts/mutation_modules.toml").read_text())
    save = "--save" in argv
    argv = [a for a in argv if a != "--save"]
    if len(argv) != 1 or argv[0] not in modules:
        print(f"usage: scripts/mutation.sh [--save] MODULE   (one of: {', '.join(modules)})", file=sys.stderr)
        return 2
    entry = modules[argv[0]]
    keep = os.environ.get("MUTATION_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=False)
    with contextlib.nullcontext(keep) if keep else tempfile.TemporaryDirectory(prefix="mutation-") as tmp:
        files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["cp", "--parents", "-t", tmp, *files.decode().split("\0")[:-1]], cwd=ROOT, check=True)
        pyproject = Path(tmp, "pyproject.toml")
        section = "\n[tool.mutmut]\n" + "\n".join(
            [
                'source_paths = ["bridge_plugins"]',
                f"only_mutate = {entry['mutate']!r}".replace("'", '"'),
                'also_copy = ["recipes", "benchmarks"]',
                f"pytest_add_cli_args_test_selection = {entry['tests']!r}".replace("'", '"'),
                'pytest_add_cli_args = ["-p", "no:cacheprovider", "-x", "-q"]',
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
        score = f"[mutation] {argv[0]}: {killed} of {len(checked)} mutants killed ({100 * killed / max(1, len(checked)):.0f} %)"
        report = "\n".join([*checked, score]) + "\n"
        print(report, end="")
        if save:
            Path(ROOT, "benchmarks/results", f"mutation_{argv[0]}.txt").write_text(report)
        return run.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
