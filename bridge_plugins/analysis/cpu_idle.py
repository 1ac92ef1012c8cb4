"""How idle this machine's CPUs are, from /proc/stat: sampled when this module is imported (the
CLI imports it first thing) and again when a trace's split is planned (trace/split_plan.py), so
that the cores free are what other processes leave now, not the load average of the last minute.
Stdlib only: it costs a command nothing to import.
"""

from __future__ import annotations

import os


def cpu_ticks(stat: str, cpus: set[int]) -> tuple[int, int]:
    """(idle, all) clock ticks so far of the CPUs ``cpus``, from the text of /proc/stat. Idle
    counts iowait too; all counts the time a virtual machine's host took (steal) too."""
    idle = every = 0
    for line in stat.splitlines():
        label, _, rest = line.partition(" ")
        if label.startswith("cpu") and label[3:].isdigit() and int(label[3:]) in cpus:
            ticks = [int(v) for v in rest.split()[:8]]
            idle += ticks[3] + ticks[4]
            every += sum(ticks)
    return idle, every


def ticks_now() -> tuple[int, int] | None:
    """:func:`cpu_ticks` of the CPUs this process may run on, now; None where there is no /proc/stat."""
    try:
        with open("/proc/stat") as fh:
            return cpu_ticks(fh.read(), os.sched_getaffinity(0))
    except (OSError, AttributeError, ValueError, IndexError):  # not Linux, or a /proc/stat of another shape
        return None


STARTED = ticks_now()
"""The first sample: when the command started."""
