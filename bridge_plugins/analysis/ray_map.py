"""The per-trace work as Ray tasks on an existing Ray cluster (``--ray ADDRESS``); see ``parallel``.

Imported only when Ray is asked for, so ``ray`` is never loaded otherwise. The driver connects
(``ray.init``), submits one task per trace, yields the results as they finish and disconnects.
``ADDRESS`` is anything ``ray.init`` takes: ``ray://HEAD:10001`` from a machine that is not a
node of the cluster (a login node), ``HEAD:6379`` or ``auto`` on a node of it.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

import bridge_plugins
from bridge_plugins.analysis.per_trace import RAY_TASK_RETRIES, WORKER_DIED, ClusterUnavailable, Done, call

CONNECT_TRIES = 3
RETRY_PREFIX = "bridge-plugins: the Ray cluster at"
_SERVER_INIT_FAILED = "Initialization failure from server"


def _read(fn: Callable[[Path], object], path: str, catch: type[Exception]) -> Done:
    done = call(fn, Path(path), catch)
    return Done(done.path, done.value, done.error, node=ray.util.get_node_ip_address())


def _why(e: Exception) -> str:
    """A connection error in one line: its first line and, where more follow, its last. Ray's
    "Initialization failure from server:" is followed by the server's traceback, whose last line
    says what failed."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    if not lines:
        return type(e).__name__
    return lines[0] if len(lines) == 1 else f"{lines[0]} {lines[-1]}"


def _connect(address: str) -> None:
    """``ray.init`` to the cluster at ``address``, its workers given this version of the package.

    Where the cluster's client server fails to start a session for us (Ray's "Initialization
    failure from server": a busy head can miss its own start-up timeouts) the connection is tried
    again, up to ``CONNECT_TRIES`` times in all, with a line on stderr each time; any other error
    (a bad address, no cluster, a refused token) ends at once, in one line."""
    for attempt in range(1, CONNECT_TRIES + 1):
        try:
            ray.init(
                address=address,
                runtime_env={"py_modules": [str(Path(bridge_plugins.__file__).parent)]},
                logging_level=logging.ERROR,
                log_to_driver=False,
            )
            return
        except Exception as e:  # ConnectionError, a bad address, a timeout: one line for the user
            with contextlib.suppress(Exception):
                ray.shutdown()  # what the failed attempt set up, so that ray.init can run again
            server_side = isinstance(e, ConnectionAbortedError) and _SERVER_INIT_FAILED in str(e)
            if not server_side or attempt == CONNECT_TRIES:
                tries = f" ({attempt} tries)" if attempt > 1 else ""
                raise ClusterUnavailable(
                    f"cannot connect to the Ray cluster at {address!r}: {_why(e)}{tries}"
                ) from None
            print(
                f"{RETRY_PREFIX} {address!r} did not start a session for us ({_why(e)}); "
                f"trying again ({attempt + 1} of {CONNECT_TRIES})",
                file=sys.stderr,
                flush=True,
            )


def _node_slots() -> list[str]:
    """The alive nodes' ids, each once per CPU it has, interleaved (a, b, a, b, a for 3 and 2 CPUs).

    Trace ``i`` goes to slot ``i % len``: the reads are shared among the nodes by their CPUs. Left to
    itself (even with SPREAD) Ray reuses the first node's worker leases for the next tasks, so short
    reads all ran on one node while the other stayed idle."""
    cpus = {n["NodeID"]: int(n["Resources"].get("CPU", 0)) for n in ray.nodes() if n["Alive"]}
    return [node for k in range(max(cpus.values(), default=0)) for node, c in cpus.items() if c > k]


def ray_map(
    fn: Callable[[Path], object], paths: list[Path], catch: type[Exception], address: str
) -> Iterator[tuple[int, Done]]:
    _connect(address)
    try:
        task = ray.remote(max_retries=RAY_TASK_RETRIES, num_cpus=1)(_read)
        slots = _node_slots()

        def submit(i: int, path: Path) -> ray.ObjectRef:
            if not slots:  # no CPU anywhere yet: Ray's own scheduling waits for one
                return task.remote(fn, str(path), catch)
            # soft: should that node die, the retry runs on another
            where = NodeAffinitySchedulingStrategy(slots[i % len(slots)], soft=True)
            return task.options(scheduling_strategy=where).remote(fn, str(path), catch)

        refs = {submit(i, p): i for i, p in enumerate(paths)}
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
