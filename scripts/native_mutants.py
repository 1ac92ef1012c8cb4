"""Mutation testing of the native chunk reader (trace/_native.c), which mutmut cannot mutate: each
planted bug below is applied to a copy of the tree, built there, and tests/analysis/test_native_reader.py
run against it; a mutant is killed when the tests fail. Run: ``nice -n 15 .venv/bin/python
scripts/native_mutants.py`` (~15-30 s a mutant). Exit 1 when a mutant that is not marked equivalent
survives. The tree here is never touched (the copy is in a temporary directory).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = "bridge_plugins/analysis/trace/_native.c"

# (what the bug does, the text it replaces, its replacement, why it cannot fail a test or None)
MUTANTS: list[tuple[str, str, str, str | None]] = [
    (
        "an integer read through strtod (-0 becomes -0.0)",
        "if (integer) {\n        int64_t i;",
        "if (0) {\n        int64_t i;",
        None,
    ),
    ("the exact quotient up to 10**23 (not a double)", "if (k <= 22) {", "if (k <= 23) {", None),
    ("the exact quotient past 2**53", "m <= (1ULL << 53)", "m <= (1ULL << 54)", None),
    (
        "20 digits in a uint64 (it wraps)",
        "if (digits > 19) { plain = 0; break; }",
        "if (digits > 20) { plain = 0; break; }",
        None,
    ),
    ("no int64 overflow check", "if (v > (UINT64_MAX - d) / 10) return FAIL;", "", None),
    (
        "no nesting limit in a skipped value",
        "if (++ps->depth > MAX_DEPTH) return FAIL;\n    ps->p++;\n    ws(ps);",
        "ps->p++;\n    ws(ps);",
        None,
    ),
    ("kept strings not checked as UTF-8", "return (flags & 2) && !utf8_ok(*out) ? FAIL : 0;", "return 0;", None),
    ("overlong 3-byte UTF-8 taken", "if (c == 0xE0 && p[1] < 0xA0) return 0;", "", None),
    ("overlong 4-byte UTF-8 taken", "if (c == 0xF0 && p[1] < 0x90) return 0;", "", None),
    ("UTF-8 past U+10FFFF taken", "if (c == 0xF4 && p[1] > 0x8F) return 0;", "", None),
    ("a cut-short UTF-8 sequence taken", "if (e - p < 2 || (p[1] & 0xC0) != 0x80) return 0;", "", None),
    (
        "a key twice taken",
        "if (seen & bit) return FAIL;\n        seen |= bit;\n    }\n    if (r) return FAIL;",
        "seen |= bit;\n    }\n    if (r) return FAIL;",
        None,
    ),
    (
        "any phase taken as skipped",
        "} else if (strchr(PHASES, ph.p[0]) != NULL && ph.p[0] != 0) {",
        "} else if (1) {",
        None,
    ),
    (
        "Context Sync kept as a launch call",
        'if (KEY_IS(e->name, "Event Sync") || KEY_IS(e->name, "Context Sync")) continue;',
        'if (KEY_IS(e->name, "Event Sync")) continue;',
        None,
    ),
    ("Trace events not dropped", "if (code & CAT_TRACE) continue;", "", None),
    ("memsets without their bytes", "if (kind == 1 || kind == 2) {", "if (kind == 1) {", None),
    ("the old format's annotations not rewritten", "if (code & CAT_OLD_OPERATOR) {", "if (0) {", None),
    ("a rewritten annotation's step not an annotation", "                annotation = 1;\n", "", None),
    ("the table lists reused across pids", "same = same && id_equal(&e->pid, &op_pid);", "", None),
    (
        "the launch thread reused across pids",
        "if (!id_equal(&e->tid, &last_tid) || !id_equal(&e->pid, &last_pid)) {",
        "if (!id_equal(&e->tid, &last_tid)) {",
        None,
    ),
    (
        "string ids never equal (a cache miss only)",
        "    if (a->kind == V_STR) return",
        "    if (0) return",
        "a miss looks the thread up again: the same index",
    ),
    (
        "no shortcut to the shared entry past MAX_NAMES",
        "if (!gpu && st->other >= 0) return st->other;",
        "",
        "Collector._id returns that same entry",
    ),
    (
        "the shared entry not looked up again after _id",
        "if (v >= 0 && !gpu && refresh_other(st)) return -1;",
        "",
        "then every later miss calls Collector._id, which returns the same entry",
    ),
]


def _build(tree: Path) -> None:
    include = sysconfig.get_paths()["include"]
    out = tree / SOURCE.replace(".c", sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", f"-I{include}", str(tree / SOURCE), "-o", str(out)], check=True)


def main() -> int:
    original = (ROOT / SOURCE).read_text()
    survivors = 0
    with tempfile.TemporaryDirectory(prefix="native-mutants-") as tmp:
        tree = Path(tmp) / "tree"
        files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
        for name in files:
            if (ROOT / name).is_file():
                (tree / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, tree / name)
        shared = os.environ.get("BRIDGE_SHARED") or str(ROOT.parent / "shared")  # the fixtures, from the copy too
        env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1", BRIDGE_SHARED=shared)
        for what, old, new, equivalent in MUTANTS:
            if original.count(old) != 1:
                print(f"STALE   {what}: its text is not in {SOURCE} once")
                survivors += 1
                continue
            (tree / SOURCE).write_text(original.replace(old, new))
            _build(tree)
            run = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-q",
                    "-x",
                    "-p",
                    "no:cacheprovider",
                    "tests/analysis/test_native_reader.py",
                ],
                cwd=tree,
                env=env,
                capture_output=True,
                text=True,
            )
            killed = run.returncode != 0
            verdict = "killed" if killed else ("equivalent" if equivalent else "SURVIVED")
            print(f"{verdict:10s} {what}" + (f" ({equivalent})" if equivalent and not killed else ""), flush=True)
            survivors += not killed and equivalent is None
    print(f"{len(MUTANTS) - survivors} of {len(MUTANTS)} killed or equivalent")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
