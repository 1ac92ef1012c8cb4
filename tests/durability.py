"""Watching what a write makes durable: the real ``os.fsync``, ``os.replace``, ``os.link`` and
``os.rename``, each wrapped to log what it touched (then called), in the order they ran."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Fsync:
    inode: int
    directory: bool


@dataclass(frozen=True)
class Publish:
    call: str  # "replace", "link" or "rename"
    target: Path


class DurabilityLog:
    """The calls made since it was installed (only those that succeeded, in order)."""

    def __init__(self) -> None:
        self.calls: list[Fsync | Publish] = []

    def expected(self, final: Path) -> list[Fsync | Publish]:
        """What a durable publish under ``final`` does: fsync the data, publish, fsync the directory."""
        call = next(c.call for c in self.calls if isinstance(c, Publish))
        file, directory = os.stat(final).st_ino, os.stat(final.parent).st_ino
        return [Fsync(file, directory=False), Publish(call, final), Fsync(directory, directory=True)]


def install(monkeypatch: pytest.MonkeyPatch) -> DurabilityLog:
    log = DurabilityLog()
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        st = os.fstat(fd)
        real_fsync(fd)
        log.calls.append(Fsync(st.st_ino, stat.S_ISDIR(st.st_mode)))

    def publishing(call: str):  # type: ignore[no-untyped-def]
        real = getattr(os, call)

        def publish(src, dst, *args, **kwargs):  # type: ignore[no-untyped-def]
            real(src, dst, *args, **kwargs)
            log.calls.append(Publish(call, Path(dst)))

        return publish

    monkeypatch.setattr(os, "fsync", fsync)
    for call in ("replace", "link", "rename"):
        monkeypatch.setattr(os, call, publishing(call))
    return log
