"""Which profiling features exclude each other: each rule said once, for both sides.

* The PyTorch profiler and nsys exclude each other: both drive CUPTI, and a trace of one would
  show the other's overhead.
* Fault tolerance (ft_launcher) excludes nsys: nsys cannot follow ft_launcher's restarts.
Standard library only: ProfilingConfig, the controller and the plugins all use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NSYS = "use_nsys_profiler"
PYTORCH = "use_pytorch_profiler"
EXCLUSIVE_PROFILERS = (NSYS, PYTORCH)
"""ProfilingConfig switches of which at most one may be on."""

NSYS_UNDER_FT = "nsys cannot follow ft_launcher's restarts (fault tolerance and an nsys capture range conflict)"
"""Why nsys is switched off when fault tolerance is on; every warning about it says this."""


def exclusive_profilers_error(values: Mapping[str, Any], owner: str = "ProfilingConfig") -> str | None:
    """The error when more than one exclusive profiler is on in ``values``, else None."""
    on = [flag for flag in EXCLUSIVE_PROFILERS if values.get(flag) is True]
    if len(on) < 2:
        return None
    return f"{owner}: {' and '.join(on)} are both True; they are mutually exclusive: turn one of them off"


def profiler_switches(flag: str) -> dict[str, bool]:
    """The switch values that turn ``flag`` on: every other exclusive profiler off."""
    if flag not in EXCLUSIVE_PROFILERS:
        raise ValueError(f"{flag!r} is not a profiler switch; one of {list(EXCLUSIVE_PROFILERS)}")
    return {f: f == flag for f in EXCLUSIVE_PROFILERS}


def switched_off_by(flag: str, existing: Mapping[str, Any]) -> list[str]:
    """The other profilers that ``existing`` has on and turning ``flag`` on switches off."""
    return [f for f, on in profiler_switches(flag).items() if not on and existing.get(f) is True]


def nsys_allowed(*, fault_tolerance: bool) -> bool:
    """Whether nsys may run: not under fault tolerance."""
    return not fault_tolerance
