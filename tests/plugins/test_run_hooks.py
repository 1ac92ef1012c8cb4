"""NeMo Run's hooks on the current Experiment (nemo_run_compat): checks registered before
``run()`` are called in the order registered, on one wrapper; outside an Experiment nothing is kept."""

from __future__ import annotations

import nemo_run as run
import pytest

from bridge_plugins.plugins.nemo_run_compat import check_before_run

pytestmark = pytest.mark.usefixtures("nemo_home")  # an isolated NeMo Run home per test (tests/conftest.py)


def test_checks_run_in_the_order_registered_before_anything_else():
    calls: list[str] = []

    def first() -> None:
        calls.append("first")

    def second() -> None:
        calls.append("second")
        raise RuntimeError("refused")

    with run.Experiment("hooks", log_level="WARN") as exp:
        check_before_run(first)
        check_before_run(second)
        original = exp.__dict__["run"]
        with pytest.raises(RuntimeError, match="^refused$"):
            exp.run()
        assert calls == ["first", "second"]
        assert exp.__dict__["_bridge_plugins_hooks_run"] == [first, second]
        check_before_run(first)
        assert exp.__dict__["run"] is original  # wrapped once, on first use
