"""An artifact is durable once the writer says "wrote": its data fsynced before its name was linked,
its directory fsynced after (tests/durability.py logs the real calls in order)."""

from __future__ import annotations

from bridge_plugins.runtime.artifacts import ArtifactWriter
from tests.durability import install


def _writes(data: bytes):  # type: ignore[no-untyped-def]
    def produce(path: str) -> None:
        with open(path, "wb") as f:
            f.write(data)

    return produce


def test_every_artifact_is_fsynced_then_linked_then_its_directory_fsynced(tmp_path, monkeypatch):
    writer = ArtifactWriter(tmp_path)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "rank0.json").write_text("an earlier attempt's")
    log = install(monkeypatch)
    final = writer.write("trace", tmp_path / "d", "rank0", ".json", _writes(b"{}"))
    assert final == tmp_path / "d" / "rank0.1.json" and final.read_bytes() == b"{}"
    assert log.calls == log.expected(final)
