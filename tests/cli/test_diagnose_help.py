"""``bridge-plugins diagnose --help`` names the finding kinds from the one list of them
(``analysis.findings.run.KINDS``), so a new kind appears there without a second list to edit."""

from __future__ import annotations

import re

from bridge_plugins.analysis.findings import run as findings
from bridge_plugins.cli import build_parser


def diagnose_help() -> str:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return sub.choices["diagnose"].format_help()


def test_the_help_names_every_kind():
    text = " ".join(diagnose_help().split())  # argparse wraps lines: compare the words
    assert len(findings.KINDS) >= 9
    assert [k for k in findings.KINDS if not re.search(rf"\b{k}\b", text)] == []


def test_a_new_kind_would_appear(monkeypatch):
    monkeypatch.setattr(findings, "KINDS", (*findings.KINDS, "a_kind_added_later"))
    assert "a_kind_added_later" in " ".join(diagnose_help().split())
