"""Two snapshots' figures side by side (``memory --compare``, the report's comparison): every delta,
which device is compared, which sites are listed and in what order, on figures written by hand."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from bridge_plugins.analysis.jsonable import jsonable
from bridge_plugins.analysis.memory import snapshot_diff
from bridge_plugins.analysis.memory.results import (
    UNKNOWN_SEGMENTS,
    DeviceFigures,
    Peak,
    SiteBytes,
    SnapshotFigures,
)
from bridge_plugins.analysis.memory.snapshot import snapshot_figures
from bridge_plugins.analysis.memory.snapshot_diff import TOP_CHANGES

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def compare_snapshot_figures(base: SnapshotFigures, new: SnapshotFigures) -> dict:
    """The comparison as JSON (what ``memory --compare --json`` prints)."""
    return jsonable(snapshot_diff.compare_snapshot_figures(base, new))


def _sites(sites: dict[str, int]) -> list[SiteBytes]:
    return [SiteBytes(site=s, bytes=b, count=1, categories={}) for s, b in sites.items()]


def _figures(file, peak, reserved, end, end_reserved, at_peak, alive, segments, other_peak=1):
    """A snapshot's figures as snapshot_figures gives them: the main device and a smaller one."""
    main = DeviceFigures(
        device=0,
        entries=1,
        peak_allocated=peak,
        peak_reserved=reserved,
        peak=Peak(index=0, time_s=None, site=None, size=None),
        end_allocated=end,
        end_reserved=end_reserved,
        timeline=[],
        sites_at_peak=_sites(at_peak),
        alive_at_end=_sites(alive),
        ooms=[],
    )
    small = dataclasses.replace(main, peak_allocated=other_peak, end_allocated=999, sites_at_peak=[], alive_at_end=[])
    count, res, requested = segments
    segs = dataclasses.replace(UNKNOWN_SEGMENTS, count=count, reserved=res, requested=requested)
    return SnapshotFigures(file=file, source="allocator", devices=[small, main], segments=segs)


def test_every_figure_of_the_main_device_and_the_segments_moves_by_new_minus_base():
    base = _figures("a.pickle", 100, 300, 40, 200, {}, {}, (3, 300, 250))
    new = _figures("b.pickle", 130, None, 25, 260, {}, {}, (5, None, 400))
    out = compare_snapshot_figures(base, new)
    assert (out["base"], out["new"]) == ("a.pickle", "b.pickle")
    assert out["peak_allocated"] == {"base": 100, "new": 130, "delta": 30}
    assert out["peak_reserved"] == {"base": 300, "new": None, "delta": None}
    assert out["end_allocated"] == {"base": 40, "new": 25, "delta": -15}
    assert out["end_reserved"] == {"base": 200, "new": 260, "delta": 60}
    assert out["segments"] == {
        "count": {"base": 3, "new": 5, "delta": 2},
        "reserved": {"base": 300, "new": None, "delta": None},
        "requested": {"base": 250, "new": 400, "delta": 150},
    }
    assert (out["sites_at_peak"], out["alive_at_end"]) == ([], [])


def test_an_unknown_base_makes_the_delta_unknown_too():
    base = _figures("a", 10, None, 0, 0, {}, {}, (0, None, 0))
    new = _figures("b", 10, 5, 0, 0, {}, {}, (0, 7, 0))
    out = compare_snapshot_figures(base, new)
    assert out["peak_reserved"] == {"base": None, "new": 5, "delta": None}
    assert out["segments"]["reserved"] == {"base": None, "new": 7, "delta": None}


def test_a_snapshot_without_devices_counts_as_zero():
    segs = dataclasses.replace(UNKNOWN_SEGMENTS, reserved=0, requested=0)
    empty = SnapshotFigures(file="none.pickle", source="allocator", devices=[], segments=segs)
    new = _figures("b", 64, 128, 32, 96, {"m.py:1 f": 64}, {"m.py:2 g": 32}, (1, 128, 100))
    out = compare_snapshot_figures(empty, new)
    assert out["peak_allocated"] == {"base": 0, "new": 64, "delta": 64}
    assert out["end_reserved"] == {"base": 0, "new": 96, "delta": 96}
    assert out["sites_at_peak"] == [{"site": "m.py:1 f", "base": 0, "new": 64, "delta": 64}]
    assert out["alive_at_end"] == [{"site": "m.py:2 g", "base": 0, "new": 32, "delta": 32}]
    back = compare_snapshot_figures(new, empty)
    assert back["peak_allocated"] == {"base": 64, "new": 0, "delta": -64}
    assert back["sites_at_peak"] == [{"site": "m.py:1 f", "base": 64, "new": 0, "delta": -64}]


def test_sites_are_the_largest_changes_first_ties_by_name_unchanged_ones_left_out_at_most_top_changes():
    base_sites = {f"s{i:02d}": 1000 for i in range(TOP_CHANGES + 2)} | {"same": 5, "gone": 300}
    new_sites = {f"s{i:02d}": 1000 + 10 * i for i in range(TOP_CHANGES + 2)} | {"same": 5, "new": 170, "tie": 170}
    out = compare_snapshot_figures(
        _figures("a", 2, 1, 1, 1, base_sites, {}, (0, 0, 0)), _figures("b", 2, 1, 1, 1, new_sites, {}, (0, 0, 0))
    )
    rows = out["sites_at_peak"]
    assert len(rows) == TOP_CHANGES == 15
    assert [r["site"] for r in rows[:4]] == ["gone", "new", "tie", "s16"]
    assert rows[0] == {"site": "gone", "base": 300, "new": 0, "delta": -300}
    assert rows[3] == {"site": "s16", "base": 1000, "new": 1160, "delta": 160}
    assert [r["site"] for r in rows[4:]] == [f"s{i:02d}" for i in range(15, 4, -1)]  # s00 (no change) and s01..s04 cut
    assert "same" not in {r["site"] for r in rows}


def test_the_device_with_the_highest_peak_is_compared():
    base = _figures("a", 10, 0, 7, 0, {"x": 10}, {}, (0, 0, 0), other_peak=9)
    new = _figures("b", 20, 0, 9, 0, {"x": 20}, {}, (0, 0, 0), other_peak=25)  # the other device peaks higher
    out = compare_snapshot_figures(base, new)
    assert out["peak_allocated"] == {"base": 10, "new": 25, "delta": 15}
    assert out["end_allocated"] == {"base": 7, "new": 999, "delta": 992}
    assert out["sites_at_peak"] == [{"site": "x", "base": 10, "new": 0, "delta": -10}]


def test_two_recipe_snapshots_compare_as_their_own_figures_say():
    b4, b8 = (snapshot_figures(FIXTURES / f"memory_recipe_b{n}.pickle") for n in (4, 8))
    out = compare_snapshot_figures(b4, b8)
    (d4,), (d8,) = b4.devices, b8.devices
    assert out["peak_allocated"] == {
        "base": d4.peak_allocated,
        "new": d8.peak_allocated,
        "delta": d8.peak_allocated - d4.peak_allocated,
    }
    assert out["peak_allocated"]["delta"] > 0  # batch 8 needs more than batch 4
    assert all(r["delta"] == r["new"] - r["base"] != 0 for r in out["sites_at_peak"])
