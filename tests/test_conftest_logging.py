"""The test harness itself: a NeMo Run Experiment dropped by one test must not blind the next
test's log capture (see ``_bridge_plugins_logs`` in conftest.py). The two tests run in order."""

import gc
import logging

import nemo_run as run


def test_experiments_left_in_reference_cycles(tmp_path):
    for name in ("first", "second"):
        exp = run.Experiment(name, base_dir=str(tmp_path), log_level="WARN")
        exp.self_ref = exp  # only the garbage collector frees it; its __del__ removes a root handler
        del exp


def test_the_next_test_still_captures_logs(caplog):
    gc.collect()  # where a collection would happen on its own, at any allocation
    logging.getLogger("bridge_plugins").error("still captured")
    assert [r.getMessage() for r in caplog.records] == ["still captured"]
