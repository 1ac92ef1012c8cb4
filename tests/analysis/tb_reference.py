"""torch-tb-profiler 0.4.3's overview of a trace, per step: the reference for step_breakdown.

Calls the plugin's own parser (``RunProfileData.parse``, what its overview page shows) on a trace
file. Test-only: scripts/install_tbprofiler.sh installs it; the tests skip without it (and fail
under CI=true, like the HTA cross-check).
"""

from __future__ import annotations

from pathlib import Path

ROLES = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec", "other")
"""Our names for the plugin's ``ProfileRole`` members, in its order (Kernel ... Other)."""


def tb_steps(path: Path, cache_dir: Path) -> dict[int, dict[str, float]]:
    """ProfilerStep number -> {role_us..., "step_us"} as the plugin computes them."""
    from torch_tb_profiler.profiler.data import RunProfileData
    from torch_tb_profiler.profiler.event_parser import ProfileRole

    profile = RunProfileData.parse("worker", "span", str(path), str(cache_dir))
    out = {}
    for name, costs in zip(profile.steps_names, profile.steps_costs, strict=True):
        c = costs.costs
        row = {f"{r}_us": float(c[i]) for i, r in enumerate(ROLES)}
        row["step_us"] = float(c[ProfileRole.Total])
        out[int(name)] = row
    return out


def dataloader_share(path: Path, cache_dir: Path) -> float:
    """The plugin's "DataLoader" share of the average step (what its recommendation quotes)."""
    steps = tb_steps(path, cache_dir).values()
    return sum(s["dataloader_us"] for s in steps) / sum(s["step_us"] for s in steps)
