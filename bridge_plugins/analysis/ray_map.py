"""The per-trace work as Ray tasks on an existing Ray cluster (``--ray ADDRESS``); see ``parallel``.

Imported only when Ray is asked for, so ``ray`` is never loaded otherwise. The driver connects
(``ray.init``), submits one task per trace, yields the results as they finish and disconnects.
``ADDRESS`` is anything ``ray.init`` takes: ``ray://HEAD:10001`` from a machine that is not a
node of the cluster (a login node), ``HEAD:6379`` or ``auto`` on a node of it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import ray

import bridge_plugins
from bridge_plugins.analysis.parallel import RAY_TASK_RETRIES, WORKER_DIED, ClusterUnavailable, Done, call


def _read(fn: Callable[[Path], object], path: str, catch: type[Exception]) -> Done:
    done = call(fn, Path(path), catch)
    return Done(done.path, done.value, done.error, node=ray.util.get_node_ip_address())


def ray_map(
    fn: Callable[[Path], object], paths: list[Path], catch: type[Exception], address: str
) -> Iterator[tuple[int, Done]]:
    try:
        ray.init(
            address=address,
            runtime_env={
                "py_modules": [str(Path(bridge_plugins.__file__).parent)]
            },  # the workers read with this version
            logging_level=logging.ERROR,
            log_to_driver=False,
        )
    except Exception as e:  # ConnectionError, a bad address, a timeout: one line for the user
        raise ClusterUnavailable(
            f"cannot connect to the Ray cluster at {address!r}: {str(e).splitlines()[0]}"
        ) from None
    try:
        # SPREAD: one trace per node in turn; the default packs tasks onto the first node until it is busy
        task = ray.remote(max_retries=RAY_TASK_RETRIES, num_cpus=1, scheduling_strategy="SPREAD")(_read)
        refs = {task.remote(fn, str(p), catch): i for i, p in enumerate(paths)}
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                i = refs[ref]
                try:
                    yield i, ray.get(ref)
                except ray.exceptions.WorkerCrashedError as e:  # died more often than it was retried
                    why = " ".join(str(e).split())[:120]
                    yield i, Done(paths[i], error=f"{paths[i]}: " + WORKER_DIED.format(why=why, n=RAY_TASK_RETRIES))
                except ray.exceptions.RayTaskError as e:  # fn raised something other than `catch`: as locally
                    raise e.as_instanceof_cause() from None
    finally:
        ray.shutdown()
