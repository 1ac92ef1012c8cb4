"""pytest configuration. Helpers live in tests/support.py (import them from there)."""

import logging

import pytest


@pytest.fixture(autouse=True)
def _bridge_plugins_logs(caplog):
    """Capture bridge_plugins' log records at INFO so tests can assert on warnings and artifact lines."""
    caplog.set_level(logging.INFO, logger="bridge_plugins")
    yield
