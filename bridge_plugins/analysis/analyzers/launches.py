"""Kernel launch statistics (HTA's ``get_cuda_kernel_launch_stats``).

For every kernel, memcpy or memset launched by ``cudaLaunchKernel(ExC)``, ``cudaMemcpyAsync`` or
``cudaMemsetAsync``: the CPU call's duration, the GPU event's duration, and the launch delay (GPU
start minus CPU call end, at least 0). Summarized, with HTA's outlier counts: kernels shorter on
the GPU than their launch on the CPU, CPU calls over ``RUNTIME_CUTOFF_US``, delays over
``LAUNCH_DELAY_CUTOFF_US``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bridge_plugins.analysis.analyzers.distribution import Distribution, describe
from bridge_plugins.analysis.trace.gpu_events import CpuCalls, GpuEvents

RUNTIME_CUTOFF_US = 50.0
LAUNCH_DELAY_CUTOFF_US = 100.0
_CALLS = frozenset(
    {
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "cudaMemcpyAsync",
        "cudaMemsetAsync",
        "runFunction - job_prep_and_submit_for_execution",
    }
)


@dataclass
class LaunchStats:
    launches: int
    cpu_duration_us: Distribution
    gpu_duration_us: Distribution
    launch_delay_us: Distribution
    shorter_on_gpu: int  # kernels that ran for less time than their launch call took
    launch_overhead_us: float  # over those kernels: launch call time minus GPU time
    slow_launch_calls: int  # CPU launch calls over RUNTIME_CUTOFF_US
    delayed_launches: int  # launch delay over LAUNCH_DELAY_CUTOFF_US
    note: str | None = None


def launched(g: GpuEvents, calls: CpuCalls, names: list[str]) -> np.ndarray:
    """Mask over g: events whose launching CPU call is one of the launch calls above."""
    launch_ids = np.array([i for i, n in enumerate(names) if n in _CALLS], dtype=np.int64)
    has = g.launch >= 0
    m = np.zeros(len(g.ts), dtype=bool)
    if len(launch_ids) and has.any():
        m[has] = np.isin(calls.name[g.launch[has]], launch_ids)
    return m


def launch_stats(g: GpuEvents, calls: CpuCalls, names: list[str]) -> LaunchStats:
    """The launches' figures, each column freed once used: a few columns as long as the GPU events
    at once took 80 MB more on a 3 GB trace (issue 32); the same values, in place."""
    m = launched(g, calls, names)
    li = g.launch[m]
    cpu_dur = calls.dur[li]
    delay = g.ts[m]
    delay -= calls.ts[li]
    del li
    delay -= cpu_dur  # g.ts - calls.ts - cpu_dur
    np.maximum(delay, 0.0, out=delay)
    delay_us, delayed = describe(delay), int((delay > LAUNCH_DELAY_CUTOFF_US).sum())
    del delay
    gpu_dur = g.dur[m]
    shorter = int((gpu_dur < cpu_dur).sum())
    gpu_us = describe(gpu_dur)
    overhead = np.subtract(cpu_dur, gpu_dur, out=gpu_dur)
    np.maximum(overhead, 0.0, out=overhead)
    return LaunchStats(
        launches=int(m.sum()),
        cpu_duration_us=describe(cpu_dur),
        gpu_duration_us=gpu_us,
        launch_delay_us=delay_us,
        shorter_on_gpu=shorter,
        launch_overhead_us=float(overhead.sum()),
        slow_launch_calls=int((cpu_dur > RUNTIME_CUTOFF_US).sum()),
        delayed_launches=delayed,
        note=None if m.any() else "no GPU event matched a CPU launch call (trace without cuda_runtime events?)",
    )
