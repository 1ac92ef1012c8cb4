"""The files through which ``bridge-plugins trigger`` asks a running job to profile its next steps.

``on_demand/progress.json`` (rank 0's progress) and ``on_demand/requests/<id>.json`` (one per
trigger), and :func:`plan_start`, the absolute start step a trigger asks for: every rank opens its
window when its own global step reaches it, so the ranks agree without a collective. Reading is
defensive (anyone who can write the directory can put anything there): a bad file is a
:class:`ProtocolError` naming it. Formats and reasons: docs/formats.md.
"""

from __future__ import annotations

import json
import math
import os
import re
import socket
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bridge_plugins.config.profiling import is_int
from bridge_plugins.jobdir.atomic_write import write_text_atomically
from bridge_plugins.jobdir.on_demand_files import MAX_FILE_BYTES as MAX_FILE_BYTES  # re-exported: part of the protocol
from bridge_plugins.jobdir.on_demand_files import PathLike, ProtocolError, read_json_file
from bridge_plugins.jobdir.own_dirs import real_dir_below

ON_DEMAND_DIR = "on_demand"
PROGRESS_FILE = "progress.json"
REQUESTS_DIR = "requests"
POLL_ENV = "BRIDGE_ON_DEMAND_POLL_S"
"""Seconds between two polls of the requests directory (default 1); larger eases a shared file system."""
DEFAULT_POLL_S = 1.0
MAX_STEPS = 1000
"""The longest on-demand window: a PyTorch trace of more steps is rarely readable and can be huge."""

_REQUEST_NAME = re.compile(r"^(\d{1,18})\.json$")


def poll_interval(environ: Mapping[str, str] | None = None) -> float:
    """The poll interval in seconds: ``$BRIDGE_ON_DEMAND_POLL_S`` if it is a number in (0, 3600], else 1."""
    raw = (os.environ if environ is None else environ).get(POLL_ENV, "")
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_POLL_S
    return value if 0 < value <= 3600 else DEFAULT_POLL_S


def on_demand_dir(output_dir: PathLike) -> Path:
    return Path(output_dir) / ON_DEMAND_DIR


def requests_dir(output_dir: PathLike) -> Path:
    return on_demand_dir(output_dir) / REQUESTS_DIR


def progress_path(output_dir: PathLike) -> Path:
    return on_demand_dir(output_dir) / PROGRESS_FILE


# ----------------------------------------------------------------------------- records
@dataclass(frozen=True)
class Request:
    """Profile global steps ``start <= step < end`` on ``ranks`` (empty: every rank)."""

    id: int
    start: int
    end: int
    ranks: tuple[int, ...] = ()
    memory: bool = False
    created: float = 0.0

    def selects(self, rank: int) -> bool:
        return not self.ranks or rank in self.ranks

    def overlaps(self, start: int, end: int) -> bool:
        return self.start < end and start < self.end


@dataclass(frozen=True)
class Progress:
    """What rank 0 publishes. ``step`` began at ``step_time`` (epoch seconds); ``steps_per_s`` is
    None until two distinct steps were seen. ``window`` is the configured window [start, end).
    ``can_record_memory``: rank 0 can record CUDA memory history (None: a job that does not say)."""

    state: str  # "running" or "finished"
    step: int | None
    step_time: float | None
    steps_per_s: float | None
    written: float
    poll_interval_s: float
    world_size: int
    window: tuple[int, int] | None = None
    pid: int = 0
    host: str = ""
    can_record_memory: bool | None = None


def _is_num(v: Any) -> bool:
    return (is_int(v) or isinstance(v, float)) and math.isfinite(v)


# ----------------------------------------------------------------------------- reading
_REQUEST_KEYS = {"id", "start", "end", "ranks", "memory", "created"}


def parse_request(data: dict, where: str = "request", expected_id: int | None = None) -> Request:
    """Validate a request's fields; ProtocolError naming the first bad one."""
    missing, unknown = sorted(_REQUEST_KEYS - set(data)), sorted(set(data) - _REQUEST_KEYS)
    if missing or unknown:
        raise ProtocolError(
            f"{where}: missing keys {missing}, unknown keys {unknown}; expected {sorted(_REQUEST_KEYS)}"
        )
    for key in ("id", "start", "end"):
        if not is_int(data[key]) or data[key] < 0:
            raise ProtocolError(f"{where}: {key}={data[key]!r} must be an int >= 0")
    rid, start, end = data["id"], data["start"], data["end"]
    if expected_id is not None and rid != expected_id:
        raise ProtocolError(f"{where}: id={rid} differs from the {expected_id} in its file name")
    if not 0 < end - start <= MAX_STEPS:
        raise ProtocolError(f"{where}: steps {start}..{end} (end exclusive) must span 1 to {MAX_STEPS} steps")
    ranks = data["ranks"]
    if not isinstance(ranks, list) or not all(is_int(r) and r >= 0 for r in ranks) or len(set(ranks)) != len(ranks):
        raise ProtocolError(f"{where}: ranks={ranks!r} must be a list of distinct ints >= 0 ([] = every rank)")
    if not isinstance(data["memory"], bool):
        raise ProtocolError(f"{where}: memory={data['memory']!r} must be true or false")
    if not _is_num(data["created"]):
        raise ProtocolError(f"{where}: created={data['created']!r} must be a number (epoch seconds)")
    return Request(rid, start, end, tuple(ranks), data["memory"], float(data["created"]))


def read_request(path: PathLike) -> Request:
    m = _REQUEST_NAME.match(Path(path).name)
    if not m:
        raise ProtocolError(f"{path}: not a request file name (<id>.json)")
    return parse_request(read_json_file(path), str(path), int(m.group(1)))


def list_requests(output_dir: PathLike, create: bool = False) -> list[tuple[str, Path]]:
    """(name, path) of every visible entry in the requests directory, sorted by request id, names
    that are not ``<id>.json`` last. Hidden names (temporary files of a writer) are skipped.

    The directory is made first with ``create``; a planted symlink on the way is refused
    (``own_dirs.UnsafeDirectoryError``), so no request is read from a directory someone else chose."""
    directory = requests_dir(output_dir)
    try:
        real_dir_below(output_dir, directory, create)
        names = [n for n in os.listdir(directory) if not n.startswith(".")]
    except FileNotFoundError:
        return []

    def key(name: str) -> tuple[int, int, str]:
        m = _REQUEST_NAME.match(name)
        return (0, int(m.group(1)), name) if m else (1, 0, name)

    return [(n, directory / n) for n in sorted(names, key=key)]


def valid_requests(output_dir: PathLike) -> list[Request]:
    """Every request that parses, in id order (the trigger's view of what is already asked)."""
    out = []
    for _name, path in list_requests(output_dir):
        try:
            out.append(read_request(path))
        except ProtocolError:
            continue
    return out


def read_progress(output_dir: PathLike) -> Progress:
    data = read_json_file(progress_path(output_dir))
    where = str(progress_path(output_dir))
    try:
        window = data.get("window")
        progress = Progress(**{**data, "window": tuple(window) if window is not None else None})
    except TypeError as e:
        raise ProtocolError(f"{where}: unexpected fields ({e})") from None
    ok = (
        progress.state in ("running", "finished")
        and (progress.step is None or is_int(progress.step))
        and all(v is None or _is_num(v) for v in (progress.step_time, progress.steps_per_s))
        and _is_num(progress.written)
        and _is_num(progress.poll_interval_s)
        and progress.poll_interval_s > 0
        and is_int(progress.world_size)
        and progress.world_size > 0
        and (progress.window is None or (len(progress.window) == 2 and all(is_int(v) for v in progress.window)))
        and (progress.can_record_memory is None or isinstance(progress.can_record_memory, bool))
    )
    if not ok:
        raise ProtocolError(f"{where}: a field has the wrong type or value: {data}")
    return progress


# ----------------------------------------------------------------------------- writing
def write_progress(output_dir: PathLike, progress: Progress) -> None:
    """Replace progress.json atomically (a reader sees the old or the new file, never a half).
    No fsync: it is rewritten every poll interval and worthless after a crash."""
    real_dir_below(output_dir, on_demand_dir(output_dir))
    write_text_atomically(progress_path(output_dir), json.dumps(asdict(progress)), replace=True, durable=False)


def new_progress(**fields: Any) -> Progress:
    return Progress(written=time.time(), pid=os.getpid(), host=socket.gethostname(), **fields)


def publish_request(output_dir: PathLike, start: int, end: int, ranks: Sequence[int], memory: bool) -> Request:
    """Write ``requests/<id>.json`` with the next free id; never replaces an existing request.

    ``os.link`` publishes the complete file under its final name or fails if the name exists,
    so two triggers at once get different ids, and a job never reads a half-written request.
    """
    directory = requests_dir(output_dir)
    ids = [int(m.group(1)) for n, _ in list_requests(output_dir, create=True) if (m := _REQUEST_NAME.match(n))]
    rid = max(ids, default=0) + 1
    real_dir_below(output_dir, directory)
    for _ in range(1000):
        req = Request(rid, start, end, tuple(ranks), memory, time.time())
        text = json.dumps({**asdict(req), "ranks": list(req.ranks)})
        try:
            write_text_atomically(directory / f"{rid}.json", text, replace=False)
            return req
        except FileExistsError:
            rid += 1
    raise OSError(f"no free request id in {directory}")


SAFETY_S = 1.0
"""Extra lead time on top of two poll intervals: clock differences, a slow file system."""
MARGIN_STEPS = 2
"""Extra steps of lead: the rank-0 sample can be one step old, and a rank acts on a request at its next step."""


def plan_start(progress: Progress, now: float, taken: Iterable[tuple[int, int]], steps: int) -> int:
    """The first step of a new ``steps``-step window, far enough ahead that every rank reads the
    request first, and clear of every window in ``taken`` ([start, end) pairs: the configured
    window and the requests already made).

    Lead time: a rank reads the requests directory once per poll interval and acts at its next
    step, rank 0's sample can be a poll interval old, plus SAFETY_S and MARGIN_STEPS. Clocks of
    the trigger's host and rank 0's are assumed to agree within SAFETY_S (NTP).
    """
    rate = progress.steps_per_s or 0.0
    # A running job's sample is at most two polls and a step old; an older one means training is
    # paused (evaluation, a checkpoint) at that step, so do not extrapolate past that.
    stall = 2 * progress.poll_interval_s + (1 / rate if rate else 0.0)
    elapsed = min(max(0.0, now - (progress.step_time or now)), stall)
    if progress.step is None:
        raise ValueError("the job has not reported a step yet")
    estimate = progress.step + rate * elapsed
    start = math.ceil(estimate + rate * (2 * progress.poll_interval_s + SAFETY_S)) + MARGIN_STEPS
    taken = sorted(taken)
    moved = True
    while moved:  # until the window overlaps none of them (they may overlap each other)
        moved = False
        for a, b in taken:
            if a < start + steps and start < b:
                start, moved = b, True
    return start
