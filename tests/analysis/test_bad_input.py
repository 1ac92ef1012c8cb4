"""Bad input to summary/compare (issue 10 item 6, issue 7 item 8): one line naming the file, exit 2, no
traceback; the job's other files are still summarized."""

from __future__ import annotations

import gzip
import json
import os
import shutil

import pytest

from bridge_plugins.analysis.job import report
from bridge_plugins.analysis.pipeline import summarize
from tests.analysis.bad_input_support import GOOD, assert_clean_error, cli
from tests.analysis.gpu_traces import J128


def truncated(path):
    data = J128[0].read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def test_truncated_gz_is_one_line_exit_2(tmp_path):
    p = truncated(tmp_path / "t.json.gz")
    assert_clean_error(cli("summary", p), str(p), "truncated gzip")


@pytest.mark.parametrize(
    "content,words",
    [
        (b"this is not json {", ("not valid JSON",)),
        (b"[1, 2, 3]", ("not a JSON object", "not a Chrome trace")),
        (b'{"schemaVersion": 1}', ("no traceEvents",)),
        (b"", ("not valid JSON",)),
    ],
)
def test_gzipped_text_that_is_not_a_trace(tmp_path, content, words):
    p = tmp_path / "x.json.gz"
    p.write_bytes(gzip.compress(content))
    assert_clean_error(cli("summary", p), str(p), *words)


def test_plain_file_named_gz_is_not_gzip(tmp_path):
    p = tmp_path / "x.pt.trace.json.gz"
    p.write_text('{"traceEvents": []}')
    assert_clean_error(cli("summary", p), str(p), "not a gzip file")


def test_empty_job_directory_and_missing_path(tmp_path):
    assert_clean_error(cli("summary", tmp_path), str(tmp_path), "no profiling artifacts")
    assert_clean_error(cli("summary", tmp_path / "nope"), "nope", "no such file")
    assert_clean_error(cli("compare", tmp_path, J128[0]), str(tmp_path), "no profiling artifacts")
    chakra = tmp_path / "rank0_steps1-2.chakra.json"
    chakra.write_text("{}")
    assert_clean_error(cli("summary", chakra), str(chakra), "Chakra execution trace")


def test_job_with_one_bad_and_one_oddly_named_trace_still_summarizes_the_good_one(tmp_path):
    d = tmp_path / "torch_profile"
    d.mkdir()
    shutil.copy(J128[0], d / GOOD)
    truncated(d / "rank1_steps551-552.pt.trace.json.gz")
    shutil.copy(J128[1], d / "rank1_stepsX-Y.pt.trace.json.gz")
    proc = cli("summary", tmp_path, "--json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    s = json.loads(proc.stdout)
    # a *.pt.trace.json.gz we did not name is torch's own name: read, its rank from distributedInfo
    assert [(t["rank"], t["rank_source"]) for t in s["traces"]] == [(0, "distributedInfo"), (1, "distributedInfo")]
    assert {p["file"].rsplit("/", 1)[1]: p["error"].split(" ")[0] for p in s["problems"]} == {
        "rank1_steps551-552.pt.trace.json.gz": "truncated",  # the CLI says 'skipped', once
    }
    stderr = proc.stderr.strip().splitlines()
    assert len(stderr) == 1 and all(line.startswith("bridge-plugins summary: skipped ") for line in stderr)


def test_main_job_report_lists_a_truncated_and_an_oddly_named_trace_instead_of_crashing(tmp_path):
    d = tmp_path / "torch_profile"
    d.mkdir()
    shutil.copy(J128[0], d / GOOD)
    truncated(d / "rank1_steps551-552.pt.trace.json.gz")
    shutil.copy(J128[1], d / "rank2_stepsX-Y.pt.trace.json.gz")
    text, steps = report(tmp_path)
    assert steps == {0: [[551, 552]]}
    assert "rank1_steps551-552.pt.trace.json.gz  unreadable: truncated gzip stream" in text
    assert "skipped" in text and "rank2_stepsX-Y.pt.trace.json.gz" in text
    assert "Top operators by self time" in text and "aten::_foreach_mul_" in text


def test_trace_without_profiler_steps_is_summarized_without_step_times_and_says_so(tmp_path):
    with gzip.open(J128[0]) as fh:
        trace = json.load(fh)
    trace["traceEvents"] = [e for e in trace["traceEvents"] if "ProfilerStep" not in str(e.get("name"))]
    p = tmp_path / "no_schedule.json"
    p.write_text(json.dumps(trace))
    (t,) = summarize([p]).traces
    assert t.steps.captured == [] and t.steps.median_us is None and "no ProfilerStep" in t.steps.note
    assert t.gpu.computation_us > 0 and t.top_cpu_ops
    proc = cli("summary", p)
    assert proc.returncode == 0 and "no ProfilerStep annotations" in proc.stdout


def test_invalid_utf8_and_huge_numbers_do_not_lose_the_file(tmp_path):
    raw = J128[0].read_bytes()
    text = gzip.decompress(raw).replace(b'"aten::_foreach_mul_"', b'"aten::\xff_foreach_mul_"', 1)
    text = text.replace(
        b'"traceEvents": [',
        b'"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "big", '
        b'"ts": 99999999999999999999999999999, "dur": 1, "args": {"correlation": 99999999999999999999999, '
        b'"stream": 7}},',
        1,
    )
    p = tmp_path / "odd.json"
    p.write_bytes(text)
    (t,) = summarize([p], top=None).traces
    assert t.gpu.computation_us == 210320
    assert any(r.name == "aten::\ufffd_foreach_mul_" for r in t.top_cpu_ops)


def test_snapshot_in_another_format_does_not_stop_the_summary(tmp_path):
    shutil.copy(J128[0], tmp_path / GOOD)
    (tmp_path / "memory_snapshot_0.pickle").write_text("not a pickle")
    proc = cli("summary", tmp_path, "--json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    s = json.loads(proc.stdout)
    assert [t["rank"] for t in s["traces"]] == [0] and s["memory"]["snapshots"]


def test_bad_top_is_a_usage_error(tmp_path):
    assert_clean_error(cli("summary", J128[0], "--top", "0"), "--top 0")


def test_fifo_is_refused_not_read_and_a_file_named_twice_counts_once(tmp_path):
    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)
    assert_clean_error(cli("summary", fifo), str(fifo), "not a regular file")
    assert len(summarize([J128[0], J128[0]]).traces) == 1
