"""A training loop under a ProfilingController, as a user writes it: the controller tests' driver."""

from __future__ import annotations


def run_loop(ctl, train_step, steps, fail_at=None, exc=ValueError):
    with ctl:
        for i in steps:
            with ctl.step(i):
                train_step()
                if i == fail_at:
                    raise exc(f"boom at {i}")
    return ctl
