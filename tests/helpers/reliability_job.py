"""A real profiled job for the fault-injection tests (tests/test_reliability_*.py).

It runs a loop of small real torch operations under ``with ProfilingController(...)``, OPS per
window step (a window large enough that writing its trace takes a while, light steps outside it,
so the main thread is mostly idle and handles a signal at once), and prints what it is doing on
stdout (``pid N``, ``step N``, ``loop done``) so a test can send a signal at the worst moment.
Usage: ``python tests/helpers/reliability_job.py OUT START END STEPS [OPS_PER_STEP] [SLEEP_AFTER_WINDOW]``.
Extra ProfilingConfig fields come as JSON in BRIDGE_TEST_CONFIG. With BRIDGE_TEST_ON_DEMAND=1 the
window is not configured but requested on demand (``publish_request`` once the controller polls),
and the light steps before it sleep 0.05 s so the poller picks the request up in time.
"""

import json
import logging
import os
import sys
import time

import torch

from bridge_plugins import ProfilingConfig, ProfilingController
from bridge_plugins.jobdir.on_demand import publish_request


def main() -> None:
    out, start, end, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    ops = int(sys.argv[5]) if len(sys.argv) > 5 else 2000
    sleep_after = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(threadName)s %(message)s")
    extra = json.loads(os.environ.get("BRIDGE_TEST_CONFIG", "{}"))
    on_demand = os.environ.get("BRIDGE_TEST_ON_DEMAND") == "1"
    window = {} if on_demand else dict(use_pytorch_profiler=True, profile_step_start=start, profile_step_end=end)
    cfg = ProfilingConfig(on_demand=on_demand, output_dir=out, **window, **extra)
    x = torch.ones(4)
    print(f"pid {os.getpid()}", flush=True)
    ctl = ProfilingController(cfg)
    with ctl:
        if on_demand:  # after entering: requests already there when the job starts are ignored
            publish_request(out, start, end, [0], False)
        for i in range(steps):
            with ctl.step(i):
                for _ in range(ops if start <= i < end else 10):  # outside the window: a light step
                    x = x + 1
            print(f"step {i}", flush=True)
            if on_demand and i < start:
                time.sleep(0.05)
            if i >= end and sleep_after:
                time.sleep(sleep_after)
        print("loop done", flush=True)
    print("controller exited", flush=True)


if __name__ == "__main__":
    main()
