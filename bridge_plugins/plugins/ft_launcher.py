"""Install ``run.FaultTolerance`` (nvidia-resiliency-ext's ft_launcher) on an executor.

``run.FaultTolerance`` is a plain ``Launcher`` subclass and NeMo Run happily wraps ``ft_launcher``
in nsys; the plugins refuse that (``bridge_plugins.config.conflicts``).
"""

from __future__ import annotations

import nemo_run as run
from nemo_run.core.execution.launcher import FaultTolerance, Torchrun

from bridge_plugins.config import conflicts
from bridge_plugins.plugins.edits import Edit
from bridge_plugins.plugins.executor_traits import peek_launcher
from bridge_plugins.plugins.nemo_run_compat import reset_launcher_setup


def plan_fault_tolerance(executor: run.Executor, *, retries: int, **ft_fields) -> tuple[Edit, FaultTolerance, bool]:
    """Install ``run.FaultTolerance`` (nsys off) and ``executor.retries``.

    Keeps the rendezvous settings of an existing Torchrun/FaultTolerance launcher. Returns the
    edit, the new launcher, and whether the launcher it replaces had nsys on.
    """
    old = peek_launcher(executor)
    keep = {}
    if isinstance(old, (Torchrun, FaultTolerance)):
        keep = {k: getattr(old, k) for k in ("rdzv_backend", "rdzv_port", "rdzv_id")}
    if isinstance(old, FaultTolerance):
        keep.update({k: getattr(old, k) for k in ("workload_check_interval", "rank_termination_signal", "log_level")})
    new = FaultTolerance(**keep, **ft_fields)
    new.nsys_profile = conflicts.nsys_allowed(fault_tolerance=True)
    had_nsys = bool(old is not None and old.nsys_profile)

    def edit() -> None:
        executor.launcher = new
        reset_launcher_setup(executor)
        executor.retries = retries

    return edit, new, had_nsys
