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
``--save`` also writes the results and the score to benchmarks/results/mutation_MODULE.txt, under a
``[files]`` line: the sha256 of the files it mutated. ``--rerun-unkilled MODULE`` reruns only the
mutants that file does not list as killed and saves the merged results: valid after tests were only
added, so it refuses when the files to mutate differ from that line (run the entry whole then).
"""

from __future__ import annotations

import contextlib
import hashlib
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
    if argv[:1] == ["--rerun-unkilled"] and len(argv) >= 2 and argv[1] in modules:
        os.environ.setdefault("BRIDGE_SHARED", str(ROOT.parent / "shared"))
        return _rerun_unkilled(argv[1], modules[argv[1]], argv[2:])
    if argv == ["--stale"]:
        names = stale(modules)
        print(f"[mutation] entries whose saved results measured other code: {', '.join(names) or 'none'}", flush=True)
    elif argv[:1] == ["--changed"] and len(argv) == 2:
        names = _touched(modules, argv[1])
        print(f"[mutation] entries whose files changed since {argv[1]}: {', '.join(names) or 'none'}", flush=True)
    elif argv == ["--all"]:
        names = list(modules)
    elif argv and all(a in modules for a in argv):
        names = argv
    else:
        print(
            f"usage: scripts/mutation.sh [--save] MODULE... | --all | --changed REV | --stale | --rerun-unkilled MODULE [MUTANT...]"
            f"   (MODULE: {', '.join(modules)})",
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


def stale(modules: dict) -> list[str]:
    """The entries whose saved results (benchmarks/results/mutation_NAME.txt) are missing, have no
    ``[files]`` line, or measured other files than these: what the scheduled lane runs, with no
    commit to remember (each results file says which code it measured)."""
    out = []
    for name, entry in modules.items():
        path = ROOT / "benchmarks/results" / f"mutation_{name}.txt"
        files = read_saved(path.read_text())[0] if path.exists() else None
        if files != fingerprint(entry):
            out.append(name)
    return out


def fingerprint(entry: dict) -> str:
    """The sha256 of the entry's files to mutate, in order: which code a saved result measured."""
    digest = hashlib.sha256()
    for path in entry["mutate"]:
        digest.update(path.encode() + b"\0" + (ROOT / path).read_bytes() + b"\0")
    return digest.hexdigest()


def read_saved(text: str) -> tuple[str | None, dict[str, str]]:
    """A saved results file: its ``[files]`` fingerprint (None in files saved before it) and each mutant's status."""
    files = None
    status: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("[files] "):
            files = line.split()[-1]
        elif not line.startswith("[") and ": " in line:
            mutant, result = line.rsplit(": ", 1)
            status[mutant] = result
    return files, status


def merged_report(name: str, files: str, status: dict[str, str], note: str = "") -> tuple[str, int, int]:
    """The results file's text for these statuses (the score last, over the mutants run), with killed and
    checked counts; a mutant not run is listed as "not checked", so ``--rerun-unkilled`` runs it."""
    listed = [f"{mutant}: {result}" for mutant, result in sorted(status.items()) if result != "skipped"]
    checked = [line for line in listed if not line.endswith(": not checked")]
    killed = sum(line.endswith(": killed") for line in checked)
    unrun = f"; {len(listed) - len(checked)} not run" if len(listed) > len(checked) else ""
    percent = 100 * killed / max(1, len(checked))
    score = f"[mutation] {name}: {killed} of {len(checked)} mutants killed ({percent:.0f} %){unrun}{note}"
    return "\n".join([f"[files] sha256 {files}", *listed, score]) + "\n", killed, len(checked)


def _rerun_unkilled(name: str, entry: dict, only: list[str] | None = None) -> int:
    """Rerun the mutants the saved results do not list as killed (``only`` those of them, when
    named: the ones a new test was written for); save the merged results."""
    path = Path(ROOT, "benchmarks/results", f"mutation_{name}.txt")
    files, saved = read_saved(path.read_text()) if path.exists() else (None, {})
    now = fingerprint(entry)
    if files != now:
        why = (
            "has no [files] line"
            if path.exists() and files is None
            else "measured other code"
            if files
            else "is missing"
        )
        print(
            f"scripts/mutation.sh: {path.relative_to(ROOT)} {why}: run the entry whole (--save {name})", file=sys.stderr
        )
        return 2
    rerun = sorted(mutant for mutant, result in saved.items() if result != "killed")
    if only:
        unknown = sorted(set(only) - set(rerun))
        if unknown:
            print(f"scripts/mutation.sh: not among {name}'s unkilled mutants: {', '.join(unknown)}", file=sys.stderr)
            return 2
        rerun = sorted(only)
    print(
        f"[mutation] {name}: rerunning {len(rerun)} of {len(saved)} mutants (those not killed at the saved run)",
        flush=True,
    )
    if not rerun:
        return 0
    returncode, status = _mutmut(name, {**entry, "run": rerun})
    # a mutant this run did not reach keeps its saved status, so a stopped rerun never raises the score
    fresh = {mutant: status[mutant] for mutant in rerun if status.get(mutant, "not checked") != "not checked"}
    note = f" -- {len(fresh)} not killed at the saved run rerun, the others as it killed them"
    report, killed, checked = merged_report(name, now, {**saved, **fresh}, note)
    print(report, end="")
    path.write_text(report)
    return returncode or int(100 * killed < MIN_SCORE * checked)


def _run(name: str, entry: dict, save: bool) -> int:
    """Run one entry; 1 if mutmut failed or fewer than MIN_SCORE % of its mutants were killed."""
    returncode, status = _mutmut(name, entry)
    report, killed, checked = merged_report(name, fingerprint(entry), status)
    print(report, end="")
    if save:
        Path(ROOT, "benchmarks/results", f"mutation_{name}.txt").write_text(report)
    return returncode or int(100 * killed < MIN_SCORE * checked)


def _mutmut(name: str, entry: dict) -> tuple[int, dict[str, str]]:
    """mutmut over one entry in a copy of the repository: its exit code and each mutant's status."""
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
        status = {}
        for line in results.splitlines():
            if ":" in line:
                mutant, result = line.rsplit(":", 1)
                status[mutant.strip()] = result.strip()
        return run.returncode, status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
