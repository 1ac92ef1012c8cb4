"""Nsight Systems exports read as traces: figures equal to ``nsys stats`` and to the PyTorch path's.

On the real export in shared/fixtures/nsys (and the stand-in with steps and NCCL made from it,
tests/analysis/nsys_fixture.py): the four ``nsys stats`` tables against the CSVs nsys 2022.4 wrote
and, when nsys is installed, against a fresh ``nsys stats`` run; the GPU split against an independent
sweep and against the same GPU events read as a Chrome trace; steps, syncs and launches per step.
"""

from __future__ import annotations

import csv
import dataclasses
import gzip
import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge_plugins.analysis.analyzers.distribution import describe
from bridge_plugins.analysis.nsys.db import open_export
from bridge_plugins.analysis.nsys.gpu import _Union
from bridge_plugins.analysis.nsys.stats_reports import StatRow, nsys_stats
from bridge_plugins.analysis.pipeline import summarize
from bridge_plugins.jobdir.scan import NothingToRead
from tests.analysis.nsys_fixture import (
    FIRST_STEP,
    NCCL_NAME,
    NSYS_FIXTURES,
    SAXPY,
    copy_of,
    need_fixture,
    with_steps_and_nccl,
)

REPORTS = {
    "gpukernsum": "gpu_kernels",
    "cudaapisum": "cuda_api",
    "gpumemtimesum": "memory_ops",
    "nvtxsum": "nvtx_ranges",
}
REL = 1e-3  # the 0.1 %


@pytest.fixture(autouse=True)
def _fixture():
    need_fixture()


@pytest.fixture
def standin(tmp_path: Path) -> Path:
    return with_steps_and_nccl(tmp_path / "standin.sqlite")


def csv_rows(path: Path) -> list[tuple]:
    """(name, count, total, avg, median, min, max, std) per row of an ``nsys stats`` CSV."""
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = []
    for r in rows:
        name = r.get("Name") or r.get("Operation") or r.get("Range")
        count = r.get("Instances") or r.get("Num Calls") or r.get("Count")
        figures = [
            float(r[k]) for k in ("Total Time (ns)", "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)", "StdDev (ns)")
        ]
        out.append((name, int(count), *figures))
    return sorted(out)


def our_rows(rows: list[StatRow]) -> list[tuple]:
    return sorted((r.name, r.count, r.total_ns, r.avg_ns, r.median_ns, r.min_ns, r.max_ns, r.std_ns) for r in rows)


def assert_same(ours: list[tuple], theirs: list[tuple]) -> None:
    assert [r[:2] for r in ours] == [r[:2] for r in theirs]
    for a, b in zip(ours, theirs, strict=True):
        for x, y in zip(a[2:], b[2:], strict=True):
            assert x == pytest.approx(y, rel=REL, abs=0.1), (a, b)  # nsys rounds to 0.1 ns


def stats_of(path: Path):
    export = open_export(path)
    try:
        return nsys_stats(export)
    finally:
        export.close()


@pytest.mark.parametrize("report", sorted(REPORTS))
def test_stats_equal_the_csvs_nsys_2022_4_wrote(report):
    theirs = csv_rows(NSYS_FIXTURES / f"saxpy_{report}.csv")
    assert theirs, "the CSV has rows"
    assert_same(our_rows(getattr(stats_of(SAXPY), REPORTS[report])), theirs)


def test_stats_equal_a_fresh_nsys_stats_run(standin, tmp_path):
    nsys = shutil.which("nsys")
    if nsys is None:
        pytest.skip("no nsys on PATH (scripts/install_nsys.sh installs it)")
    ours = stats_of(standin)  # before nsys stats touches the file
    copy = copy_of(standin, tmp_path / "for_nsys.sqlite")
    cmd = [nsys, "stats", "--report", ",".join(REPORTS), "--format", "csv", "-o", str(tmp_path / "fresh"), str(copy)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    for report, field in REPORTS.items():
        theirs = csv_rows(tmp_path / f"fresh_{report}.csv")
        assert theirs, report
        assert_same(our_rows(getattr(ours, field)), theirs)
    assert any(r[0] == "ProfilerStep#10" for r in csv_rows(tmp_path / "fresh_nvtxsum.csv"))


def gpu_rows(path: Path) -> list[tuple[int, int, str]]:
    """Every kernel, copy and memset as (start, end, name), names as a Kineto trace writes them."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        kernels = conn.execute(
            "SELECT k.start, k.end, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName"
        ).fetchall()
        copies = conn.execute(
            "SELECT start, end, 'Memcpy HtoD (Pinned -> Device)' FROM CUPTI_ACTIVITY_KIND_MEMCPY"
        ).fetchall()
    return kernels + copies


def union(intervals: list[tuple[int, int]]) -> int:
    """Length of a union of intervals: the plain sweep, independent of the reader's SQL."""
    total, end = 0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total, end = total + e - s, e
        elif e > end:
            total, end = total + e - end, e
    return total


def test_gpu_split_equals_an_independent_sweep(standin):
    rows = gpu_rows(standin)
    comp = [(s, e) for s, e, n in rows if n.startswith("saxpy")]
    comm = [(s, e) for s, e, n in rows if n.startswith("nccl")]
    span = max(e for _, e, _ in rows) - min(s for s, _, _ in rows)
    busy = union([(s, e) for s, e, _ in rows])
    g = summarize([standin]).traces[0].gpu
    assert g.span_us == pytest.approx(span / 1e3, rel=1e-12)
    assert g.computation_us == pytest.approx(union(comp) / 1e3, rel=1e-12)
    assert g.communication_total_us == pytest.approx(union(comm) / 1e3, rel=1e-12)
    assert g.communication_us == pytest.approx((union(comp + comm) - union(comp)) / 1e3, rel=1e-12)
    assert g.idle_us == pytest.approx((span - busy) / 1e3, rel=1e-12)
    assert g.communication_us > 0 and g.gpu_events == len(rows) == 25


def test_gpu_split_equals_the_pytorch_path_on_the_same_events(standin, tmp_path):
    events = [
        {"ph": "X", "cat": "gpu_memcpy" if n.startswith("Memcpy") else "kernel", "name": n, "pid": 0, "tid": 7,
         "ts": s / 1e3, "dur": (e - s) / 1e3, "args": {"stream": 7, "device": 0, "correlation": i + 1}}
        for i, (s, e, n) in enumerate(gpu_rows(standin))
    ]  # fmt: skip
    chrome = tmp_path / "same_events.json.gz"
    with gzip.open(chrome, "wt") as fh:
        json.dump({"traceEvents": events}, fh)
    ours, torch_path = (summarize([p]).traces[0].gpu for p in (standin, chrome))
    assert ours is not None and torch_path is not None
    for key, value in dataclasses.asdict(torch_path).items():
        assert getattr(ours, key) == pytest.approx(value, rel=1e-9, abs=1e-6), key


def test_summary_json_names_the_format_and_has_steps_syncs_and_launches(standin):
    s = summarize([standin])
    t = s.traces[0]
    assert t.format == "nsys-sqlite" and t.nsys.version == "2022.2.1.31"
    assert t.steps.captured == list(range(FIRST_STEP, FIRST_STEP + 5))
    a = t.analyses
    # per iteration: two blocking copies in, one out, one launch (the 2022.2 export records each call twice)
    assert a.syncs.per_step == dict.fromkeys(range(FIRST_STEP, FIRST_STEP + 5), 3)
    assert a.syncs.by_name == {"cudaMemcpy": 15}
    assert [d.launches for d in a.steps] == [1] * 5
    with sqlite3.connect(f"file:{SAXPY}?mode=ro", uri=True) as conn:
        kernels = [e - s for s, e in conn.execute("SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start")]
    assert [d.gpu_us for d in a.steps] == pytest.approx([k / 1e3 for k in kernels])
    assert a.launches.launches == 5
    expected = describe(np.array(kernels, dtype=float) / 1e3)
    for field, value in vars(a.launches.gpu_duration_us).items():
        assert value == pytest.approx(getattr(expected, field), rel=1e-12), field
    assert a.overlap.overlap_pct == pytest.approx(50.0, abs=1e-6)
    copies = {k.kind: (k.events, k.pageable, k.bytes) for k in a.bandwidth.kinds}
    assert copies == {"Memcpy HtoD": (10, 10, 10 * 262144000.0), "Memcpy DtoH": (5, 5, 5 * 262144000.0)}
    kinds = {f.kind for f in s.findings}
    assert {"sync_point", "memcpy"} <= kinds
    assert {r.name: r.calls for r in t.top_cpu_ops}["cudaMemcpy"] == 15


def test_precision_and_per_step_rows_have_the_trace_schema_of_a_chrome_trace(standin):
    """The GPU from TARGET_INFO_GPU (an A100: Tensor Cores), no GEMM among saxpy's kernels; per-step rows
    with the keys a Chrome trace's have, and no breakdown (no CPU operators to split a step by)."""
    t = summarize([standin]).traces[0]
    p = t.precision
    assert (p.device, p.compute_capability, p.tensor_cores) == ("NVIDIA A100-SXM4-40GB", 8.0, True)
    assert (p.fp32_us, p.half_us, p.fp32_kernels) == (0.0, 0.0, [])
    assert [(r.step, r.breakdown, r.input_wait_us, r.input_span) for r in t.per_step] == [
        (step, None, 0.0, None) for step in range(FIRST_STEP, FIRST_STEP + 5)
    ]
    assert [r.time_us for r in t.per_step] == [d.duration_us for d in t.analyses.steps]


def test_an_export_without_the_optional_tables_and_columns_is_read(standin):
    with sqlite3.connect(standin) as conn:
        for table in ("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_MEMSET", "EXPORT_META_DATA"):
            conn.execute(f"DROP TABLE {table}")
        conn.execute(
            "UPDATE NVTX_EVENTS SET text = (SELECT value FROM StringIds WHERE id = textId) WHERE textId IS NOT NULL"
        )
        conn.execute("ALTER TABLE NVTX_EVENTS DROP COLUMN textId")  # names inline only, as older exports write them
        inline = "(SELECT value FROM StringIds WHERE id = demangledName)"
        conn.execute(f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = {inline}")  # kernel names inline too
    t = summarize([standin]).traces[0]
    assert t.steps.count == 5 and t.gpu.gpu_events == 25
    assert {k.name: k.type for k in t.top_gpu_kernels}[NCCL_NAME] == "communication"
    assert t.gpu.communication_total_us > 0 and t.nsys.stats.gpu_kernels[0].name.startswith(("saxpy", "nccl"))
    assert t.nsys.version is None and t.nsys.cupti_synchronizations == {}


def test_an_export_with_only_nvtx_has_steps_and_no_gpu(standin):
    with sqlite3.connect(standin) as conn:
        for table in ("KERNEL", "MEMCPY", "MEMSET", "RUNTIME", "SYNCHRONIZATION"):
            conn.execute(f"DROP TABLE CUPTI_ACTIVITY_KIND_{table}")
    t = summarize([standin]).traces[0]
    assert t.gpu is None and t.top_gpu_kernels == [] and t.steps.count == 5


def test_bad_inputs_are_one_line_problems(tmp_path, monkeypatch):
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t(x)")
    (tmp_path / "text.sqlite").write_text("not a database")
    (tmp_path / "profile_1.qdstrm").write_bytes(b"raw")
    (tmp_path / "report.nsys-rep").write_bytes(b"not a report")
    monkeypatch.setenv("PATH", str(tmp_path))  # no nsys
    monkeypatch.delenv("NSYS", raising=False)
    monkeypatch.setenv("BRIDGE_PLUGINS_CACHE", str(tmp_path / "cache"))
    files = ["other.sqlite", "text.sqlite", "profile_1.qdstrm", "report.nsys-rep"]
    s = summarize([SAXPY, *(tmp_path / f for f in files)])
    errors = {Path(p.file).name: p.error for p in s.problems}
    assert set(errors) == set(files) and len(s.traces) == 1
    assert "not an nsys export" in errors["other.sqlite"] and "not an SQLite file" in errors["text.sqlite"]
    assert "never imported" in errors["profile_1.qdstrm"]
    assert errors["report.nsys-rep"].startswith(
        "an Nsight Systems report is read through its SQLite export and no nsys is on PATH"
    )
    assert all("\n" not in e for e in errors.values())


def test_a_job_directory_reads_a_report_once_from_its_export_beside_it(tmp_path):
    nsys_dir = tmp_path / "nsys_profile"
    nsys_dir.mkdir()
    copy_of(SAXPY, nsys_dir / "profile_123.sqlite")
    (nsys_dir / "profile_123.nsys-rep").write_bytes(b"the report the export was made from")
    s = summarize([tmp_path])
    assert [t.file for t in s.traces] == [str(nsys_dir / "profile_123.sqlite")] and s.problems == []


@pytest.mark.slow
def test_a_real_nsys_rep_is_exported_once_and_read(tmp_path, monkeypatch, capfd):
    nsys = shutil.which("nsys")
    if nsys is None:
        pytest.skip("no nsys on PATH (scripts/install_nsys.sh installs it)")
    job = tmp_path / "job"
    (job / "nsys_profile").mkdir(parents=True)
    report = job / "nsys_profile" / "profile_4242.nsys-rep"
    cmd = [
        nsys,
        "profile",
        "-t",
        "osrt",
        "-s",
        "none",
        "--cpuctxsw=none",
        "-f",
        "true",
        "-o",
        str(report.with_suffix("")),
    ]
    subprocess.run([*cmd, "sleep", "0.2"], check=True, capture_output=True, timeout=120)
    assert report.is_file()
    monkeypatch.setenv("BRIDGE_PLUGINS_CACHE", str(tmp_path / "cache"))
    first = summarize([report])
    assert "exporting" in capfd.readouterr().err
    again = summarize([job])  # the job directory: the same report, found by the scan
    assert "exporting" not in capfd.readouterr().err  # the cached export is read
    t = again.traces[0]
    assert t.format == "nsys-rep" and t.file == str(report) and t.nsys.version.startswith("2022.4")
    assert first.traces[0].events == t.events and t.gpu is None
    assert len(list((tmp_path / "cache" / "nsys").glob("profile_4242-*.sqlite"))) == 1
    # a cache that cannot be made (here under a regular file; a read-only home or a full disk alike)
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("BRIDGE_PLUGINS_CACHE", str(tmp_path / "a-file" / "cache"))
    with pytest.raises(NothingToRead) as refused:  # what the CLI prints as its one line
        summarize([report])
    assert str(refused.value).startswith(f"{report}: cannot keep its export in {tmp_path / 'a-file' / 'cache'}")
    assert "\n" not in str(refused.value)


@given(
    st.lists(st.tuples(st.integers(0, 10**12), st.integers(0, 10**9)), max_size=60),
    st.integers(1, 7),
)
@settings(max_examples=200, deadline=None)
def test_the_block_union_equals_the_plain_sweep(pairs, block):
    intervals = sorted((s, s + d) for s, d in pairs)
    u = _Union()
    for at in range(0, len(intervals), block):  # fed a block at a time, as the reader does
        part = np.array(intervals[at : at + block], dtype=np.int64).reshape(-1, 2)
        u.add(part[:, 0], part[:, 1])
    assert u.length == union(intervals)


def test_the_four_commands_take_an_export(standin, tmp_path, capsys):
    from bridge_plugins.cli import main

    assert main(["summary", str(standin), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["traces"][0]["format"] == "nsys-sqlite" and out["traces"][0]["nsys"]["stats"]["gpu_kernels"]
    assert main(["diagnose", str(standin), "--json"]) == 0
    assert "sync_point" in {f["kind"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert main(["report", str(standin), "-o", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r.html").stat().st_size > 1000
    assert main(["compare", str(SAXPY), str(standin)]) == 0
    assert "GPU communication" in capsys.readouterr().out


def test_a_large_export_shows_its_phases_on_a_terminal(standin, monkeypatch):
    import io

    from bridge_plugins.analysis.nsys import as_trace as nsys_summary

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    term = Terminal()
    monkeypatch.setattr("sys.stderr", term)
    monkeypatch.setattr(nsys_summary, "BIG_BYTES", 0)  # the stand-in counts as large
    nsys_summary.summarize_export(standin)
    lines = term.getvalue().split("\r")
    assert "bridge-plugins: standin.sqlite: GPU time split\x1b[K" in lines and lines[-1] == "\x1b[K"


def test_a_gpu_table_without_process_ids_still_joins_its_launches(standin):
    with sqlite3.connect(standin) as conn:  # memsets without globalPid, kernels with it
        conn.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, streamId, value, bytes) "
                     "VALUES (1, 2, 0, 1, 7, 0, 64)")  # fmt: skip
        conn.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_MEMSET DROP COLUMN globalPid")
    s = summarize([standin])
    assert s.problems == [] and s.traces[0].analyses.launches.launches == 5
