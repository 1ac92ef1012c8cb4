"""A trace's names reach the terminal as they are, and never as a command to it: rich reads neither
markup (``[bold]``, a stray ``[/x]`` it would refuse with a traceback) nor emoji codes (``:fire:``)
in them, and their control characters (ESC's escape sequences, C1's CSI) are taken out
(analysis/text/terminal.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from bridge_plugins.analysis.pipeline import summarize
from bridge_plugins.analysis.text.summary import to_text
from tests.support import clean_env

CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # as terminal.py's: written again, to test it

NAMES = (":fire: op", "x[bold]y op", "[/oops] op", "[link=https://x.invalid]click[/link] op")
HOSTILE = {  # name in the trace -> what the terminal shows
    "title\x1b]0;pwned\x07 op": "title]0;pwned op",
    "red\x1b[31mtext op": "red[31mtext op",
    "clear\x1b[2J op": "clear[2J op",
    "csi\x9b31m op": "csi31m op",
    "nul\x00del\x7f op": "nuldel op",
}


def _trace(tmp_path):
    events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100}]
    for i, name in enumerate((*NAMES, *HOSTILE)):
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
    assert len(rows) == len(NAMES) + len(HOSTILE), out.stdout
    for name in (*NAMES, *HOSTILE.values()):
        assert name in out.stdout, (name, out.stdout)
    assert CONTROLS.search(out.stdout) is None


def test_a_colour_terminal_gets_rich_styles_and_none_of_the_traces_controls(tmp_path):
    """FORCE_COLOR: rich writes its styles (ESC sequences of its own) as on a terminal; the names'
    sequences are not among them."""
    path = _trace(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "bridge_plugins", "summary", str(path)],
        env={**clean_env(), "FORCE_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "\x1b[" in out.stdout  # rich's own styles
    styles = re.compile("\x1b\\[[0-9;]*m")
    assert CONTROLS.search(styles.sub("", out.stdout)) is None, out.stdout
    for name in HOSTILE.values():
        assert name in styles.sub("", out.stdout)


def test_plain_text_tables_keep_each_name(tmp_path):
    text = to_text(summarize([_trace(tmp_path)]))
    for name in (*NAMES, *HOSTILE.values()):
        assert name in text, (name, text)
    assert CONTROLS.search(text) is None
