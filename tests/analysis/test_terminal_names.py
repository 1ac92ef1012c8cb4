"""A trace's names reach the terminal as they are: rich reads neither markup (``[bold]``, a stray
``[/x]`` it would refuse with a traceback) nor emoji codes (``:fire:``) in them."""

from __future__ import annotations

import json
import subprocess
import sys

from bridge_plugins.analysis.pipeline import summarize
from bridge_plugins.analysis.text.summary import to_text
from tests.support import clean_env

NAMES = (":fire: op", "x[bold]y op", "[/oops] op", "[link=https://x.invalid]click[/link] op")


def _trace(tmp_path):
    events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100}]
    for i, name in enumerate(NAMES):
        events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": 10 + 10 * i, "dur": 5})
    path = tmp_path / "rank0.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_summary_tables_print_each_name_verbatim(tmp_path):
    path = _trace(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "bridge_plugins", "summary", str(path)],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if " op " in line]
    assert len(rows) == len(NAMES), out.stdout
    for name in NAMES:
        assert name in out.stdout, (name, out.stdout)


def test_plain_text_tables_keep_each_name(tmp_path):
    text = to_text(summarize([_trace(tmp_path)]))
    for name in NAMES:
        assert name in text, (name, text)
