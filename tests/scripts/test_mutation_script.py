"""scripts/mutation.py's saved results: the fingerprint of the code they measured, and the merge of a
rerun of the mutants not killed (a stopped rerun never raises a score)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def mutation():
    spec = importlib.util.spec_from_file_location("mutation_script", ROOT / "scripts/mutation.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutation_script"] = module
    spec.loader.exec_module(module)
    return module


def test_a_saved_file_reads_back_its_fingerprint_and_every_status(mutation):
    status = {"m.x__mutmut_2": "survived", "m.x__mutmut_1": "killed", "m.y__mutmut_1": "timeout"}
    text, killed, checked = mutation.merged_report(
        "demo", "abc", {**status, "m.z__mutmut_1": "not checked", "m.w__mutmut_1": "skipped"}
    )
    assert text.splitlines() == [
        "[files] sha256 abc",
        "m.x__mutmut_1: killed",
        "m.x__mutmut_2: survived",
        "m.y__mutmut_1: timeout",
        "m.z__mutmut_1: not checked",
        "[mutation] demo: 1 of 3 mutants killed (33 %); 1 not run",
    ]
    assert (killed, checked) == (1, 3)
    assert mutation.read_saved(text) == ("abc", {**status, "m.z__mutmut_1": "not checked"})


def test_a_file_saved_before_fingerprints_has_none(mutation):
    assert mutation.read_saved("m.x__mutmut_1: killed\n[mutation] demo: 1 of 1 mutants killed (100 %)\n") == (
        None,
        {"m.x__mutmut_1": "killed"},
    )


def test_the_fingerprint_changes_with_one_byte_of_a_file_to_mutate(mutation, tmp_path, monkeypatch):
    monkeypatch.setattr(mutation, "ROOT", tmp_path)
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 2\n")
    first = mutation.fingerprint({"mutate": ["a.py", "b.py"]})
    (tmp_path / "b.py").write_text("y = 3\n")
    assert mutation.fingerprint({"mutate": ["a.py", "b.py"]}) != first
    assert mutation.fingerprint({"mutate": ["b.py", "a.py"]}) != mutation.fingerprint({"mutate": ["a.py", "b.py"]})


def test_a_rerun_is_refused_when_the_code_changed_since_the_saved_results(mutation, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(mutation, "ROOT", tmp_path)
    (tmp_path / "benchmarks/results").mkdir(parents=True)
    (tmp_path / "a.py").write_text("x = 1\n")
    saved = tmp_path / "benchmarks/results/mutation_demo.txt"
    saved.write_text("[files] sha256 0000\nm.x__mutmut_1: survived\n[mutation] demo: 0 of 1 mutants killed (0 %)\n")
    monkeypatch.setattr(mutation, "_mutmut", lambda name, entry: pytest.fail("mutmut must not run"))
    assert mutation._rerun_unkilled("demo", {"mutate": ["a.py"]}) == 2
    assert "measured other code: run the entry whole (--save demo)" in capsys.readouterr().err


def test_a_rerun_reruns_only_the_unkilled_and_keeps_a_saved_status_it_did_not_reach(mutation, tmp_path, monkeypatch):
    monkeypatch.setattr(mutation, "ROOT", tmp_path)
    (tmp_path / "benchmarks/results").mkdir(parents=True)
    (tmp_path / "a.py").write_text("x = 1\n")
    entry = {"mutate": ["a.py"], "run": ["m.*"]}
    saved = tmp_path / "benchmarks/results/mutation_demo.txt"
    saved.write_text(
        mutation.merged_report(
            "demo",
            mutation.fingerprint(entry),
            {"m.a__mutmut_1": "killed", "m.b__mutmut_1": "survived", "m.c__mutmut_1": "survived"},
        )[0]
    )
    asked = []

    def fake_mutmut(name, run_entry):
        asked.append(run_entry["run"])
        return 0, {"m.a__mutmut_1": "not checked", "m.b__mutmut_1": "killed", "m.c__mutmut_1": "not checked"}

    monkeypatch.setattr(mutation, "_mutmut", fake_mutmut)
    assert mutation._rerun_unkilled("demo", entry) == 1  # 2 of 3 killed: under 90 %
    assert asked == [["m.b__mutmut_1", "m.c__mutmut_1"]]
    lines = saved.read_text().splitlines()
    assert lines[1:4] == ["m.a__mutmut_1: killed", "m.b__mutmut_1: killed", "m.c__mutmut_1: survived"]
    assert lines[-1] == (
        "[mutation] demo: 2 of 3 mutants killed (67 %) -- 1 not killed at the saved run rerun, the others as it killed them"
    )


def test_stale_names_the_entries_whose_saved_results_measured_other_code(mutation, tmp_path, monkeypatch):
    monkeypatch.setattr(mutation, "ROOT", tmp_path)
    (tmp_path / "benchmarks/results").mkdir(parents=True)
    for name in ("a", "b", "c", "d"):
        (tmp_path / f"{name}.py").write_text(f"{name} = 1\n")
    modules = {name: {"mutate": [f"{name}.py"]} for name in ("a", "b", "c", "d")}
    results = tmp_path / "benchmarks/results"
    (results / "mutation_a.txt").write_text(f"[files] sha256 {mutation.fingerprint(modules['a'])}\nm.x: killed\n")
    (results / "mutation_b.txt").write_text(f"[files] sha256 {mutation.fingerprint(modules['b'])}\nm.x: killed\n")
    (results / "mutation_c.txt").write_text("m.x: killed\n")  # saved before fingerprints
    (tmp_path / "b.py").write_text("b = 2\n")  # changed since its results; d has none
    assert mutation.stale(modules) == ["b", "c", "d"]


def test_a_rerun_of_named_mutants_runs_only_those_and_refuses_a_killed_or_unknown_one(mutation, tmp_path, monkeypatch):
    monkeypatch.setattr(mutation, "ROOT", tmp_path)
    (tmp_path / "benchmarks/results").mkdir(parents=True)
    (tmp_path / "a.py").write_text("x = 1\n")
    entry = {"mutate": ["a.py"]}
    saved = tmp_path / "benchmarks/results/mutation_demo.txt"
    statuses = {"m.x__mutmut_1": "killed", "m.x__mutmut_2": "survived", "m.x__mutmut_3": "not checked"}
    saved.write_text(mutation.merged_report("demo", mutation.fingerprint(entry), statuses)[0])
    ran = []

    def mutmut(name, entry):
        ran.append(entry["run"])
        return 0, {"m.x__mutmut_3": "killed"}

    monkeypatch.setattr(mutation, "_mutmut", mutmut)
    assert mutation._rerun_unkilled("demo", entry, ["m.x__mutmut_1"]) == 2
    assert mutation._rerun_unkilled("demo", entry, ["m.x__mutmut_9"]) == 2
    assert ran == []
    mutation._rerun_unkilled("demo", entry, ["m.x__mutmut_3"])
    assert ran == [["m.x__mutmut_3"]]
    assert mutation.read_saved(saved.read_text())[1] == {**statuses, "m.x__mutmut_3": "killed"}
