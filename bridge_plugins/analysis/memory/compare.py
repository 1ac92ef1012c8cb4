"""Two snapshots side by side: how the peaks, the end state and each site's bytes at the peak moved.

Works on :func:`bridge_plugins.analysis.memory.snapshot.snapshot_figures` dicts (each reduced to its main
device), so ``memory --compare`` and the report's comparison use the same figures.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bridge_plugins.analysis.memory.snapshot import main_device

_FIGURES = ("peak_allocated", "peak_reserved", "end_allocated", "end_reserved")
TOP_CHANGES = 15


def _delta(base: int | None, new: int | None) -> dict:
    """None (unknown, e.g. reserved bytes of a profiler-made snapshot) makes the delta None."""
    return {"base": base, "new": new, "delta": None if base is None or new is None else new - base}


def _by_site(rows: Iterable[dict[str, Any]]) -> dict[str, int]:
    return {row["site"]: row["bytes"] for row in rows}


def _site_deltas(base_rows: Iterable[dict[str, Any]], new_rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    base, new = _by_site(base_rows), _by_site(new_rows)
    rows = [{"site": s, **_delta(base.get(s, 0), new.get(s, 0))} for s in set(base) | set(new)]
    rows = [r for r in rows if r["delta"]]
    return sorted(rows, key=lambda r: (-abs(r["delta"]), r["site"]))[:TOP_CHANGES]


def compare_snapshot_figures(base: dict, new: dict) -> dict:
    """``{"base", "new", <figure>: {"base", "new", "delta"}, "sites_at_peak": [...], "alive_at_end":
    [...], "segments": {...}}``; a snapshot without a trace counts as zero everywhere."""
    b, n = main_device(base) or {}, main_device(new) or {}
    out = {"base": base["file"], "new": new["file"]}
    for key in _FIGURES:
        out[key] = _delta(b.get(key, 0), n.get(key, 0))
    out["sites_at_peak"] = _site_deltas(b.get("sites_at_peak", []), n.get("sites_at_peak", []))
    out["alive_at_end"] = _site_deltas(b.get("alive_at_end", []), n.get("alive_at_end", []))
    out["segments"] = {k: _delta(base["segments"][k], new["segments"][k]) for k in ("count", "reserved", "requested")}
    return out


compare_summaries = compare_snapshot_figures  # the old name (docs/reference/api.md named it), kept for callers
