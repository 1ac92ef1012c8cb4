"""docs/analysis-schema.md lists every field of every result class, under the class's heading."""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path

from bridge_plugins.analysis.analyzers.all import TraceAnalyses
from bridge_plugins.analysis.figures import NsysReport
from bridge_plugins.analysis.findings.model import Finding

DOC = Path(__file__).resolve().parents[2] / "docs" / "analysis-schema.md"


def result_classes(cls, seen=None) -> list[type]:
    seen = [] if seen is None else seen
    if cls in seen:
        return seen
    seen.append(cls)
    for hint in typing.get_type_hints(cls).values():
        for t in (hint, *typing.get_args(hint), *(a for h in typing.get_args(hint) for a in typing.get_args(h))):
            if dataclasses.is_dataclass(t):
                result_classes(t, seen)
    return seen


def test_every_field_is_documented_under_its_class():
    text = DOC.read_text()
    sections = dict(re.findall(r"^### (\w+)\n(.*?)(?=^##|\Z)", text, flags=re.S | re.M))
    classes = result_classes(TraceAnalyses) + [Finding] + result_classes(NsysReport)
    assert len(classes) >= 20
    for cls in classes:
        assert cls.__name__ in sections, f"no '### {cls.__name__}' in {DOC.name}"
        missing = [f.name for f in dataclasses.fields(cls) if f"`{f.name}`" not in sections[cls.__name__]]
        assert not missing, f"{cls.__name__}: {missing} not in {DOC.name}"
