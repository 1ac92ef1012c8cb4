"""The HTML report in a real headless Chromium (Debian's package, scripts/install_chromium.sh) with
the network off (``unshare --net``): every chart is drawn, the numbers shown are the
``summary --json`` / ``compare --json`` / ``memory --json`` figures, and a screenshot is saved.

Inputs: two ranks of the real 128-rank GPU job (../shared/fixtures/gpu-traces) with the schema
snapshot (rank 0) and the recipe's profiler-made snapshot (rank 1); baseline: the real 2-rank job's
rank 0 with the recipe's batch-8 snapshot.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from bridge_plugins.analysis.report.parts import fmt_bytes, fmt_ms, fmt_ms_signed, fmt_pct

REPO = Path(__file__).resolve().parents[2]
# <repo>/../shared as CI lays it out; BRIDGE_SHARED points elsewhere (a worktree away from shared/)
SHARED_TRACES = Path(os.environ.get("BRIDGE_SHARED") or REPO.parent / "shared") / "fixtures" / "gpu-traces"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CLI = [sys.executable, "-m", "bridge_plugins"]
UNDER_CI = os.environ.get("CI") == "true"


def _unavailable(reason: str):
    if UNDER_CI:
        pytest.fail(f"CI=true: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def chromium() -> str:
    if shutil.which("chromium") is None:
        proc = subprocess.run(
            ["bash", str(REPO / "scripts" / "install_chromium.sh")], capture_output=True, text=True, timeout=900
        )
        if proc.returncode != 0 or shutil.which("chromium") is None:
            _unavailable(f"chromium cannot be installed here: {(proc.stdout + proc.stderr).strip()[-300:]}")
    probe = subprocess.run(["unshare", "--net", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        _unavailable(f"cannot turn the network off (unshare --net needs root): {probe.stderr.strip()}")
    return browser_binary()


def browser_binary() -> str:
    """Debian's browser itself, not its /usr/bin/chromium wrapper script, whose /dev/shm check
    prints '[: ...: unexpected operator' where findmnt lists two mounts (what scripts/install_chromium.sh
    calls too); the wrapper where the binary is elsewhere."""
    real = Path("/usr/lib/chromium/chromium")
    return str(real) if os.access(real, os.X_OK) else shutil.which("chromium")


class _Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children, self.text = tag, dict(attrs), parent, [], ""

    def iter(self):
        yield self
        for c in self.children:
            yield from c.iter()

    def find_all(self, tag=None, cls=None, **attrs):
        return [
            n
            for n in self.iter()
            if (tag is None or n.tag == tag)
            and (cls is None or cls in (n.attrs.get("class") or "").split())
            and all(n.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())
        ]

    def by_id(self, node_id):
        found = self.find_all(id=node_id)
        assert len(found) == 1, f"expected one element #{node_id}, found {len(found)}"
        return found[0]

    def all_text(self):
        return self.text + "".join(c.all_text() for c in self.children)


class _Tree(HTMLParser):
    VOID = {"meta", "br", "img", "input", "link", "hr", "col", "source", "wbr"}

    def __init__(self):
        super().__init__()
        self.root = self.cur = _Node("#root", {}, None)

    def handle_starttag(self, tag, attrs):
        node = _Node(tag, attrs, self.cur)
        self.cur.children.append(node)
        if tag not in self.VOID:
            self.cur = node

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(_Node(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        n = self.cur
        while n is not None and n.tag != tag:
            n = n.parent
        if n is not None and n.parent is not None:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.text += data


def _json(*args):
    proc = subprocess.run([*CLI, *args, "--json"], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _job(root: Path, traces: dict, snapshots: dict) -> Path:
    (root / "torch_profile").mkdir(parents=True)
    for name, src in traces.items():
        shutil.copy(SHARED_TRACES / src, root / "torch_profile" / name)
    for name, src in snapshots.items():
        shutil.copy(FIXTURES / src, root / name)
    return root


@pytest.fixture(scope="module")
def rendered(tmp_path_factory, chromium):
    if not SHARED_TRACES.is_dir():
        _unavailable(f"{SHARED_TRACES} is missing (CI clones the repo with shared/ beside it)")
    tmp = tmp_path_factory.mktemp("report")
    job = _job(
        tmp / "job",
        {
            "rank0_steps551-552.pt.trace.json.gz": "job128_rank0.json.gz",
            "rank1_steps551-552.pt.trace.json.gz": "job128_rank1.json.gz",
        },
        {"memory_snapshot_0.pickle": "memory_schema.pickle", "memory_snapshot_1.pickle": "memory_recipe_b4.pickle"},
    )
    base = _job(
        tmp / "base",
        {"rank0_steps4-6.pt.trace.json.gz": "job2_rank0.json.gz"},
        {"memory_snapshot_0.pickle": "memory_recipe_b8.pickle"},
    )
    out = tmp / "report.html"
    proc = subprocess.run(
        [*CLI, "report", str(job), "-o", str(out), "--baseline", str(base)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert proc.returncode == 0 and out.is_file(), proc.stderr
    chrome = [
        "unshare",
        "--net",
        chromium,
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--window-size=1400,1000",
        "--virtual-time-budget=3000",
    ]
    dom = subprocess.run([*chrome, "--dump-dom", out.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0 and "</html>" in dom.stdout, dom.stderr[-2000:]
    shot = tmp / "report.png"
    subprocess.run([*chrome, f"--screenshot={shot}", out.as_uri()], capture_output=True, text=True, timeout=120)
    tree = _Tree()
    tree.feed(dom.stdout)
    return {
        "dom": tree.root,
        "html": out.read_text(),
        "shot": shot,
        "summary": _json("summary", str(job), "--timelines"),
        "compare": _json("compare", str(base), str(job)),
        "memory0": _json("memory", str(job / "memory_snapshot_0.pickle")),
        "memory_compare": _json(
            "memory", str(base / "memory_snapshot_0.pickle"), "--compare", str(job / "memory_snapshot_0.pickle")
        ),
    }


EXPECTED_CHARTS = [
    "chart-steps",
    "chart-gpu",
    "chart-stragglers-0",
    "chart-memory-timeline-0",
    "chart-memory-sites-0",
    "chart-memory-timeline-1",
    "chart-memory-sites-1",
    "chart-compare-gpu",
]


def test_screenshot_saved(rendered):
    png = rendered["shot"].read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20], "big") == 1400 and len(png) > 20_000


def test_every_chart_is_drawn(rendered):
    dom = rendered["dom"]
    charts = {f.attrs["id"]: f for f in dom.find_all("figure", cls="chart")}
    assert set(EXPECTED_CHARTS) <= set(charts)
    for chart_id, fig in charts.items():
        (svg,) = fig.find_all("svg")
        marks = [r for r in svg.find_all("rect") if float(r.attrs["width"]) > 0] + [
            p for p in svg.find_all("polyline") if len(p.attrs["points"].split()) > 1
        ]
        assert marks, f"{chart_id} has nothing drawn"


def test_nothing_external_and_no_script(rendered):
    dom = rendered["dom"]
    assert not dom.find_all("script")
    for node in dom.iter():
        for key in ("src", "href"):
            assert not (node.attrs.get(key) or "").startswith(("http:", "https:", "//")), node.attrs


def test_every_figure_shown_is_its_exact_value_formatted(rendered):
    """Each table cell's text is its data-value through the formatter it names (data-format)."""
    cells = [n for n in rendered["dom"].iter() if "data-format" in n.attrs]
    assert len(cells) > 200
    formats = {f.__name__: f for f in (fmt_ms, fmt_ms_signed, fmt_bytes, fmt_pct)}
    for n in cells:
        assert n.all_text() == formats[n.attrs["data-format"]](float(n.attrs["data-value"])), n.attrs


def _num(node, key="data-value"):
    return float(node.attrs[key])


def test_overview_median_step(rendered):
    import statistics

    want = statistics.median(t["steps"]["median_us"] for t in rendered["summary"]["traces"])
    node = rendered["dom"].find_all("div", cls="median-step")[0]
    assert _num(node) == want and fmt_ms(want) in node.all_text()


def test_step_times_equal_summary(rendered):
    bars = rendered["dom"].by_id("chart-steps").find_all("g", cls="bar")
    want = {t["rank"]: t["steps"] for t in rendered["summary"]["traces"]}
    assert {int(b.attrs["data-rank"]) for b in bars} == set(want)
    for b in bars:
        steps = want[int(b.attrs["data-rank"])]
        assert [_num(b, f"data-{k}-us") for k in ("min", "median", "max")] == [
            steps[f"{k}_us"] for k in ("min", "median", "max")
        ]
        assert fmt_ms(steps["median_us"]) in b.all_text()


def test_gpu_breakdown_equals_summary(rendered):
    dom = rendered["dom"]
    want = {t["rank"]: t["gpu"] for t in rendered["summary"]["traces"]}
    bars = dom.by_id("chart-gpu").find_all("g", cls="bar")
    assert len(bars) == 2
    for b in bars:
        gpu = want[int(b.attrs["data-rank"])]
        assert _num(b, "data-span-us") == gpu["span_us"]
        shown = {r.attrs["data-key"]: _num(r) for r in b.find_all("rect", cls="seg")}
        assert shown == {k: gpu[f"{k}_us"] for k in ("computation", "communication", "memory", "idle")}
    for td in dom.by_id("table-gpu").find_all("td", cls="num"):
        if "data-value" in td.attrs:
            assert td.all_text() == fmt_ms(_num(td))
    values = [_num(td) for td in dom.by_id("table-gpu").find_all("td") if "data-value" in td.attrs]
    assert values[:6] == [
        want[0][k]
        for k in ("span_us", "computation_us", "communication_us", "memory_us", "idle_us", "communication_total_us")
    ]


def test_top_ops_and_kernels_equal_summary(rendered):
    dom = rendered["dom"]
    for i, t in enumerate(rendered["summary"]["traces"]):
        rows = dom.by_id(f"table-ops-{i}").find_all("tr")[1:]
        assert [r.find_all("td", cls="name")[0].attrs["title"] for r in rows] == [o["name"] for o in t["top_cpu_ops"]]
        assert [_num(r.find_all("td", cls="num")[0]) for r in rows] == [o["self_us"] for o in t["top_cpu_ops"]]
        rows = dom.by_id(f"table-kernels-{i}").find_all("tr")[1:]
        assert [
            (r.find_all("td", cls="name")[0].attrs["title"], _num(r.find_all("td", cls="num")[0])) for r in rows
        ] == [(k["name"], k["total_us"]) for k in t["top_gpu_kernels"]]


def test_straggler_view_equals_summary(rendered):
    dom = rendered["dom"]
    (group,) = rendered["summary"]["cross_rank"]
    bars = {int(b.attrs["data-rank"]): b for b in dom.by_id("chart-stragglers-0").find_all("g", cls="bar")}
    for r in group["ranks"]:
        b = bars[r["rank"]]
        assert (
            b.attrs["data-straggler"] == str(r["straggler"]).lower()
            and b.attrs["data-waiting"] == str(r["waiting"]).lower()
        )
        assert {x.attrs["data-key"]: _num(x) for x in b.find_all("rect")} == {
            k: r[f"{k}_vs_median"] for k in ("step", "computation", "communication")
        }
    figures = ("step_median_us", "step_vs_median", "computation_us", "computation_vs_median")
    figures += ("communication_total_us", "communication_vs_median")
    rows = dom.by_id("table-stragglers-0").find_all("tr")[1:]
    assert [[_num(c) for c in row.find_all("td", cls="num")] for row in rows] == [
        [r[k] for k in figures] for r in group["ranks"]
    ]
    assert group["stragglers"] == [1]
    verdict = dom.find_all("p", cls="verdict")[0].all_text()
    assert "rank 1" in verdict and fmt_pct(group["ranks"][1]["computation_vs_median"]) in verdict


def test_memory_equals_memory_json(rendered):
    dom = rendered["dom"]
    (dev,) = rendered["memory0"]["devices"]
    snap = dom.by_id("memory-0")
    peak = snap.find_all("div", cls="peak-allocated")[0]
    assert _num(peak) == dev["peak_allocated"] and fmt_bytes(dev["peak_allocated"]) in peak.all_text()
    assert _num(snap.find_all("div", cls="peak-reserved")[0]) == dev["peak_reserved"]
    sites = [
        (g.attrs["data-site"], int(g.attrs["data-bytes"])) for g in dom.by_id("chart-memory-sites-0").find_all("g")
    ]
    assert sites == [(r["site"], r["bytes"]) for r in dev["sites_at_peak"]]
    assert [
        _num(td) for td in dom.by_id("table-memory-end-0").find_all("td", cls="num") if "data-value" in td.attrs
    ] == [r["bytes"] for r in dev["alive_at_end"]]
    memory_files = rendered["summary"]["memory"]["files"]
    assert [f["rank"] for f in memory_files] == [0, 1]


def test_comparison_equals_compare_json(rendered):
    dom, c = rendered["dom"], rendered["compare"]
    assert _num(dom.find_all("div", cls="base-step")[0]) == c["base"]["step_median_us"]
    assert _num(dom.find_all("div", cls="new-step")[0]) == c["new"]["step_median_us"]
    assert _num(dom.find_all("div", cls="delta")[0]) == c["step_delta_us"]
    assert fmt_ms_signed(c["step_delta_us"]) in dom.find_all("div", cls="delta")[0].all_text()
    assert fmt_ms(c["new"]["step_median_us"]) in dom.find_all("div", cls="new-step")[0].all_text()
    for table_id, key in (
        ("table-ops-regressions", "ops_regressions"),
        ("table-kernels-improvements", "kernels_improvements"),
    ):
        rows = dom.by_id(table_id).find_all("tr")[1:]
        assert [
            (r.find_all("td", cls="name")[0].attrs["title"], _num(r.find_all("td", cls="num")[2])) for r in rows
        ] == [(x["name"], x["delta_us"]) for x in c[key]]
    bars = {
        b.attrs["data-run"]: _num(b, "data-span-us") for b in dom.by_id("chart-compare-gpu").find_all("g", cls="bar")
    }
    assert bars == {"base": c["base"]["gpu"]["span_us"], "new": c["new"]["gpu"]["span_us"]}
    mem = rendered["memory_compare"]
    cells = [_num(td) for td in dom.by_id("table-compare-memory").find_all("td") if "data-value" in td.attrs]
    assert cells[:3] == [mem["peak_allocated"][k] for k in ("base", "new", "delta")]


LAYOUT_PROBE = """<script>
const aligned = (e) => ({start: "left", end: "right"})[getComputedStyle(e).textAlign] || getComputedStyle(e).textAlign;
const facts = {
  cards: [...document.querySelectorAll(".cards")].map((c) => [...c.children].map((e) => Math.round(e.getBoundingClientRect().top))),
  columns: [...document.querySelectorAll("table")].flatMap((t) => {
    const row = t.querySelector("tbody tr");
    return [...t.querySelectorAll("thead th")].map((th, i) => {
      const td = row && row.children[i];
      return [t.id, th.textContent, aligned(th), td && td.colSpan === 1 ? aligned(td) : null];
    });
  }),
};
const pre = document.createElement("pre");
pre.id = "layout";
pre.textContent = JSON.stringify(facts);
document.body.appendChild(pre);
</script>"""


def _laid_out(chromium: str, report: Path, width: int = 1400) -> dict:
    """Where the browser put things: a copy of the page without its CSP, with LAYOUT_PROBE, which
    writes the facts into the DOM that --dump-dom prints (the report itself has no script)."""
    html = report.read_text()
    probe = report.with_name("probe_" + report.name)
    head, rest = html.split('<meta http-equiv="Content-Security-Policy"', 1)
    probe.write_text(head + rest.split(">", 1)[1].replace("</body>", LAYOUT_PROBE + "</body>"))
    dom = subprocess.run(
        [
            "unshare",
            "--net",
            chromium,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--window-size={width},1000",
            "--virtual-time-budget=3000",
            "--dump-dom",
            probe.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    tree = _Tree()
    tree.feed(dom.stdout)
    return json.loads(tree.root.by_id("layout").all_text())


@pytest.fixture(scope="module")
def long_paths_report(tmp_path_factory, chromium) -> dict:
    """A comparison of two jobs at the paths NeMo Run gives them (long, no spaces)."""
    if not SHARED_TRACES.is_dir():
        _unavailable(f"{SHARED_TRACES} is missing (CI clones the repo with shared/ beside it)")
    tmp = tmp_path_factory.mktemp("long")
    jobs = [
        tmp / "experiments" / "tiny_gpt_profiling" / f"tiny_gpt_profiling_17961385007250{n}5996" / "tiny_gpt"
        for n in (0, 1)
    ]
    _job(jobs[0], {"rank0_steps4-6.pt.trace.json.gz": "job2_rank0.json.gz"}, {})
    _job(jobs[1], {"rank0_steps551-552.pt.trace.json.gz": "job128_rank0.json.gz"}, {})
    out = tmp / "compare.html"
    proc = subprocess.run(
        [*CLI, "report", str(jobs[1]), "--baseline", str(jobs[0]), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    return _laid_out(chromium, out)


def test_each_row_of_cards_shares_one_line_even_with_long_paths(long_paths_report):
    """The comparison's three cards showed one full-width card, then two sharing a row."""
    rows = long_paths_report["cards"]
    assert len(rows) >= 2 and all(len(row) >= 3 for row in rows[-1:]), rows
    assert all(len(set(tops)) == 1 for tops in rows), rows


def test_every_column_header_is_aligned_with_its_cells(long_paths_report, rendered, chromium, tmp_path):
    """Numbers (and their '–' cells) are right-aligned: so must their headers be."""
    shown = (
        long_paths_report["columns"] + _laid_out(chromium, Path(rendered["shot"]).with_name("report.html"))["columns"]
    )
    assert any(table == "table-stragglers-0" for table, *_ in shown), "the straggler table is checked"
    off = [c for c in shown if c[3] is not None and c[2] != c[3]]
    assert not off, off


def test_findings_come_first_and_equal_diagnose(rendered):
    dom = rendered["dom"]
    (main,) = dom.find_all("main")
    sections = [n for n in main.iter() if n.tag == "section" and n.attrs.get("id") != "problems"]
    assert sections[0].attrs["id"] == "findings"
    want = rendered["summary"]["findings"]
    shown = dom.by_id("findings").find_all("details", cls="finding")
    assert [(d.attrs["data-kind"], d.attrs["data-severity"]) for d in shown] == [
        (f["kind"], f["severity"]) for f in want
    ]
    assert [_num(d.find_all("td", cls="num")[0]) for d in shown] == [f["time_us_per_step"] for f in want]
    assert {f["kind"] for f in want} >= {"exposed_communication", "straggler", "memcpy", "sync_point"}


def test_findings_link_to_a_drawn_timeline(rendered):
    dom = rendered["dom"]
    for d in dom.by_id("findings").find_all("details", cls="finding"):
        target = d.attrs["data-timeline"]
        (link,) = [a for a in d.find_all("a") if a.attrs.get("href") == f"#{target}"]
        fig = dom.by_id(target)
        assert "timeline" in fig.attrs["class"].split() and fig.find_all("rect", cls="ev-cpu_op"), target


def test_timelines_equal_summary(rendered):
    dom = rendered["dom"]
    for t in rendered["summary"]["traces"]:
        for tl in t["analyses"]["timelines"]:
            fig = dom.by_id(f"timeline-rank{t['rank']}-{tl['which']}")
            assert int(fig.attrs["data-step"]) == tl["step"]
            lanes = fig.find_all("g", cls="lane")
            assert [(g.attrs["data-label"], int(g.attrs["data-bars"])) for g in lanes] == [
                (lane["label"], len(lane["bars"])) for lane in tl["lanes"]
            ]
            for g, lane in zip(lanes, tl["lanes"], strict=True):
                rects = g.find_all("rect")[1:]  # the first is the lane's background
                assert [_num(r) for r in rects] == [b["duration_us"] for b in lane["bars"]]
                for r, b in list(zip(rects, lane["bars"], strict=True))[:20]:
                    (title,) = r.find_all("title")
                    assert title.all_text() == f"{b['name']}: {fmt_ms(b['duration_us'])} ({b['category']})"
            kinds = {c for lane in tl["lanes"] for b in lane["bars"] for c in [b["category"]]}
            assert {"cpu_op", "computation", "communication"} <= kinds
    assert {t["analyses"]["timelines"][1]["which"] for t in rendered["summary"]["traces"]} == {"slowest"}
