"""The version: one number in pyproject.toml, read back from the installed metadata, with a changelog entry."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys

import bridge_plugins
from tests.support import ROOT, clean_env


def test_version_flag_prints_the_installed_version():
    proc = subprocess.run(
        [sys.executable, "-m", "bridge_plugins", "--version"], env=clean_env(), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"bridge-plugins {importlib.metadata.version('bridge-plugins')}"
    assert bridge_plugins.__version__ == importlib.metadata.version("bridge-plugins")


def test_an_uninstalled_checkout_says_so(monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert bridge_plugins._version() == "0+unknown"


def test_the_changelog_has_an_entry_for_the_version_in_pyproject():
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    headings = re.findall(r"^## \[([^\]]+)\]", (ROOT / "CHANGELOG.md").read_text(), re.M)
    released = headings[1:] if headings[:1] == ["Unreleased"] else headings  # Keep a Changelog: Unreleased on top
    assert released and released[0] == version, (version, headings)
