"""What the plugins need to know about NeMo Run executors, in one place.

Every fact here was read from nemo_run 0.11.1 (``core/execution/*.py``,
``run/torchx_backend/{packaging.py,components/*.py,schedulers/*.py}``):

* **Where the job sees its job directory.** LocalExecutor runs in ``executor.job_dir``.
  SlurmExecutor mounts the job dir at ``/nemo_run`` when it runs a container, and otherwise
  rewrites ``/nemo_run`` in the sbatch text to the job dir on the cluster
  (``tunnel.job_dir/<job>``), but not in the packaged task configs, so a run.Partial needs the real
  path. Docker, Skypilot, DGX Cloud and Lepton expose the job dir at ``/nemo_run``.
* **Where nsys writes.** ``Launcher.get_nsys_prefix(profile_dir)`` writes to
  ``<profile_dir>/<nsys_folder>/<nsys_filename>``. Slurm, DGX Cloud and Lepton pass ``/nemo_run``;
  Docker and Skypilot pass the *host* job dir, which does not exist in their container, so the
  report is lost. For those two the plugin swaps in a launcher subclass (same fields) whose prefix
  uses ``/nemo_run``. On Slurm every process needs its own file: ``%p`` alone repeats across nodes.
* **How Script args reach the program** (see ``arg_encoding``).
* **The fault-tolerance launcher.** ``run.FaultTolerance`` is a plain ``Launcher`` subclass and
  NeMo Run happily wraps ``ft_launcher`` in nsys; the plugins refuse that. SlurmExecutor configures
  its launcher once (``Executor._launcher_setup``); replacing ``executor.launcher`` after anyone
  called ``get_launcher()`` skips that step (FT then dies with a bare AssertionError when the sbatch
  script is rendered), so whoever swaps the launcher resets ``_launcher_setup``.

Functions named ``plan_*`` validate and compute everything first and return an *edit*: a
no-argument callable that only assigns. Plugins call all edits at the end of ``setup``, so a
``setup`` that raises leaves the executor and the task untouched.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import shlex
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, List, Optional, Sequence, Tuple

import nemo_run as run
from nemo_run.core.execution.launcher import LAUNCHER_MAP, FaultTolerance, Launcher, Torchrun
from bridge_plugins.artifact_names import NSYS_SLURM_FILENAME

Edit = Callable[[], None]

CONTAINER_JOB_DIR = "/nemo_run"
"""Where NeMo Run's container executors (and Slurm with a container image) mount the job dir."""

SLURM_NSYS_FILENAME = NSYS_SLURM_FILENAME
"""One report per Slurm task: job id, node and task rank (with torchrun: one nsys per node)."""

GPU_METRICS_ENV = "GPU_METRICS_NODES"
"""NeMo Run's Slurm nsys wrapper samples GPU metrics on nodes whose SLURM_NODEID is listed here."""

# nsys options NeMo Run emits itself before nsys_extra_args; repeating them confuses nsys.
RESERVED_NSYS_FLAGS = {"-o": "placement is set per executor", "--output": "placement is set per executor",
                       "-t": "use nsys_trace", "--trace": "use nsys_trace",
                       "-s": "NeMo Run sets '-s none'", "--sample": "NeMo Run sets '-s none'"}


class ProfilingPluginWarning(UserWarning):
    """A plugin changed or dropped something the user asked for, and says why."""


def warn(message: str) -> None:
    warnings.warn(message, ProfilingPluginWarning, stacklevel=3)


# --------------------------------------------------------------------------------------------
# Launchers
# --------------------------------------------------------------------------------------------


def peek_launcher(executor: run.Executor) -> Optional[Launcher]:
    """The launcher the executor will use, without ``get_launcher()``'s side effects.

    ``get_launcher()`` turns a string into an object and, on Slurm, rewrites ntasks_per_node;
    planning must not mutate, so a string is resolved into a fresh, unattached instance.
    """
    launcher = executor.launcher
    if isinstance(launcher, str):
        return LAUNCHER_MAP[launcher]()
    return launcher


def is_fault_tolerant(executor: run.Executor, launcher: Optional[Launcher] = None) -> bool:
    return isinstance(launcher if launcher is not None else peek_launcher(executor), FaultTolerance)


def _is(executor: run.Executor, *names: str) -> bool:
    classes = tuple(getattr(run, n) for n in names if hasattr(run, n))
    return isinstance(executor, classes)


def _slurm_has_container(executor: run.SlurmExecutor) -> bool:
    # Mirrors SlurmBatchRequest.materialize: any container image means /nemo_run is a mount.
    if executor.container_image is not None:
        return True
    return bool(executor.run_as_group and any(rg.container_image for rg in executor.resource_group))


def job_dir_seen_by_job(executor: run.Executor) -> Optional[str]:
    """The path under which the running job sees its NeMo Run job directory, or None if unknown."""
    if isinstance(executor, run.LocalExecutor):
        return executor.job_dir or None
    if isinstance(executor, run.SlurmExecutor):
        if _slurm_has_container(executor):
            return CONTAINER_JOB_DIR
        base = executor.tunnel.job_dir if executor.tunnel is not None else ""
        return os.path.join(base, Path(executor.job_dir).name) if base else executor.job_dir or None
    if _is(executor, "DockerExecutor", "SkypilotExecutor", "SkypilotJobsExecutor", "DGXCloudExecutor",
           "LeptonExecutor"):
        return CONTAINER_JOB_DIR
    return None


# --------------------------------------------------------------------------------------------
# nsys
# --------------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class ContainerNsysLauncher(Launcher):
    """``Launcher`` whose nsys report goes to the container's job dir (Docker, Skypilot)."""

    def get_nsys_prefix(self, profile_dir: str) -> Optional[List[str]]:
        return super().get_nsys_prefix(profile_dir=CONTAINER_JOB_DIR)


@dataclass(kw_only=True)
class ContainerNsysTorchrun(Torchrun):
    """``Torchrun`` whose nsys report goes to the container's job dir (Docker, Skypilot)."""

    def get_nsys_prefix(self, profile_dir: str) -> Optional[List[str]]:
        return super().get_nsys_prefix(profile_dir=CONTAINER_JOB_DIR)


_CONTAINER_LAUNCHERS = {Launcher: ContainerNsysLauncher, Torchrun: ContainerNsysTorchrun}


def _flag_groups(args: Sequence[str]) -> List[Tuple[str, List[str]]]:
    """Split nsys options into (flag name, tokens): '--a=1' and '--a 1' both name '--a'."""
    groups: List[Tuple[str, List[str]]] = []
    for tok in args:
        if tok.startswith("-") or not groups:
            groups.append((tok.split("=", 1)[0], [tok]))
        else:
            groups[-1][1].append(tok)
    return groups


def validate_nsys_extra_args(owner: str, args) -> None:
    if not isinstance(args, (list, tuple)) or not all(isinstance(a, str) for a in args):
        raise TypeError(f"{owner}.nsys_extra_args must be a list of str, got {args!r}; "
                        f"e.g. ['--capture-range=none']")
    for name, tokens in _flag_groups(args):
        if not name.startswith("-"):
            raise ValueError(f"{owner}.nsys_extra_args={list(args)!r}: {name!r} is not an nsys option; "
                             f"each entry must start with '-' (values may follow their flag)")
        if name in RESERVED_NSYS_FLAGS:
            raise ValueError(f"{owner}.nsys_extra_args={list(args)!r} sets {name!r}: "
                             f"{RESERVED_NSYS_FLAGS[name]}; remove it")


def merge_nsys_args(base: Sequence[str], user: Sequence[str]) -> List[str]:
    """``base`` with each flag the user also gives replaced in place; new user flags appended.

    Idempotent: merging the same user args again yields the same list.
    """
    user_groups = dict(_flag_groups(user))
    out: List[str] = []
    seen = set()
    for name, tokens in _flag_groups(base):
        if name in seen:
            continue
        seen.add(name)
        out += user_groups.get(name, tokens)
    for name, tokens in _flag_groups(user):
        if name not in seen:
            seen.add(name)
            out += tokens
    return out


def plan_nsys(
    executor: run.Executor,
    *,
    trace: Sequence[str],
    extra_args: Sequence[str],
    gpu_metrics: bool,
    profile_ranks: Sequence[int],
) -> Tuple[Edit, Launcher]:
    """Turn on the launcher's nsys wrapper, with a per-executor report location.

    Returns the edit and the launcher the executor will have (Script args are encoded for it).
    The new launcher is a copy with the same fields; Slurm's one-time launcher setup is
    unaffected because the launcher type does not change (except for container executors,
    which have no launcher setup).
    """
    launcher = peek_launcher(executor) or Launcher()
    on_slurm = isinstance(executor, run.SlurmExecutor)
    new_cls = type(launcher)
    if _is(executor, "DockerExecutor", "SkypilotExecutor", "SkypilotJobsExecutor"):
        if type(launcher) in _CONTAINER_LAUNCHERS:
            new_cls = _CONTAINER_LAUNCHERS[type(launcher)]
        elif type(launcher) not in _CONTAINER_LAUNCHERS.values():
            warn(f"NsysPlugin: {type(executor).__name__} with launcher {type(launcher).__name__} writes the "
                 f"nsys report under the host job dir, which the container does not see")
    if gpu_metrics and not on_slurm:
        warn(f"NsysPlugin: nsys_gpu_metrics is only supported on SlurmExecutor by NeMo Run; "
             f"ignored on {type(executor).__name__}")
    fields = {f.name: copy.deepcopy(getattr(launcher, f.name)) for f in dataclasses.fields(launcher) if f.init}
    fields.update(nsys_profile=True, nsys_trace=list(trace),
                  nsys_extra_args=merge_nsys_args(launcher.nsys_extra_args, extra_args))
    if on_slurm:
        fields["nsys_filename"] = SLURM_NSYS_FILENAME
        fields["nsys_gpu_metrics"] = bool(gpu_metrics) or launcher.nsys_gpu_metrics
    new = new_cls(**fields)

    def edit() -> None:
        executor.launcher = new
        if on_slurm and new.nsys_gpu_metrics and GPU_METRICS_ENV not in executor.env_vars:
            executor.get_launcher()  # Slurm's launcher setup fixes nproc_per_node for torchrun
            executor.env_vars[GPU_METRICS_ENV] = _gpu_metrics_nodes(executor, profile_ranks)

    return edit, new


def _gpu_metrics_nodes(executor: run.SlurmExecutor, profile_ranks: Sequence[int]) -> str:
    """Comma-separated SLURM_NODEID list of nodes hosting profiled ranks (no spaces: NeMo Run
    exports env vars unquoted). Call after ``get_launcher()`` so nproc_per_node is final."""
    nnodes = executor.nnodes()
    per_node = max(1, executor.nproc_per_node())
    nodes = range(nnodes) if not profile_ranks else sorted({r // per_node for r in profile_ranks if r // per_node < nnodes})
    return ",".join(str(n) for n in nodes) or "0"


# --------------------------------------------------------------------------------------------
# Fault tolerance
# --------------------------------------------------------------------------------------------


def plan_fault_tolerance(executor: run.Executor, *, retries: int, **ft_fields) -> Tuple[Edit, FaultTolerance, bool]:
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
    new.nsys_profile = False
    had_nsys = bool(old is not None and old.nsys_profile)

    def edit() -> None:
        executor.launcher = new
        # Slurm configures a launcher once; a swapped-in launcher must be configured again.
        executor._launcher_setup = False
        executor.retries = retries

    return edit, new, had_nsys


# --------------------------------------------------------------------------------------------
# How Script args reach the program
# --------------------------------------------------------------------------------------------
# An argument of a run.Script passes through up to four stages before the program's argv:
#  * "nrq": with a Torchrun or FaultTolerance launcher, NeMo Run's torchrun/ft_launcher component
#    applies shlex.quote to every script arg (for every executor).
#  * "tmpl": executors with macro_values() (Slurm, Skypilot, Kubeflow) run string.Template
#    safe_substitute over every arg: '$$' becomes '$'.
#  * the delivery: LocalExecutor hands argv to Popen (no shell: "nrq" quotes arrive literally);
#    Slurm, Skypilot, DGX Cloud and Lepton join args with spaces into a bash script, unquoted;
#    Docker joins them into `bash -c "..."`, which docker-py splits with shlex first;
#    Slurm with nsys_gpu_metrics puts the whole command inside `bash -c '...'`.
# arg_encoding returns the steps the plugin applies (innermost first) so that these stages give
# the program exactly the intended string.


def _dq_bash(s: str) -> str:
    if shlex.quote(s) == s:  # shell-safe: no quoting needed at any level
        return s
    return '"' + "".join("\\" + c if c in '\\"$`' else c for c in s) + '"'


def _undq_bash(s: str) -> str:
    if shlex.quote(s) == s:
        return s
    if len(s) < 2 or s[0] != '"' or s[-1] != '"':
        raise ValueError("not double-quoted")
    out, it = [], iter(s[1:-1])
    for c in it:
        out.append(next(it, "") if c == "\\" else c)
    return "".join(out)


def _undq(s: str) -> str:
    out, it = [], iter(s)
    for c in it:
        if c == "\\":
            c = next(it, "")
            if c not in '\\"':
                raise ValueError("unescaped backslash")
        elif c == '"':
            raise ValueError("unescaped double quote")
        out.append(c)
    return "".join(out)


def _no_single_quote(s: str) -> str:
    if "'" in s:
        raise ValueError(f"script arg {s!r} contains a single quote; NeMo Run's launcher quoting breaks it "
                         f"on this executor (Docker, or Slurm with nsys GPU metrics, with torchrun)")
    return s


def _unshell(s: str) -> str:
    parts = shlex.split(s)
    if len(parts) != 1:
        raise ValueError("not one shell word")
    return parts[0]


_STEPS = {
    # name: (encode, decode)
    "shell": (shlex.quote, _unshell),
    "sq": (lambda s: s.replace("'", "'\\''"), lambda s: s.replace("'\\''", "'")),
    "dq": (lambda s: s.replace("\\", "\\\\").replace('"', '\\"'), _undq),
    "nosq": (_no_single_quote, _no_single_quote),
    "dqbash": (_dq_bash, _undq_bash),
    "tmpl": (lambda s: s.replace("$", "$$"), lambda s: s.replace("$$", "$")),
}

_UNSET = object()


def arg_encoding(executor: run.Executor, launcher=_UNSET) -> Tuple[str, ...]:
    """The encoding steps for Script args on ``executor`` (with ``launcher`` if given)."""
    launcher = peek_launcher(executor) if launcher is _UNSET else launcher
    nrq = isinstance(launcher, (Torchrun, FaultTolerance))
    tmpl = ("tmpl",) if executor.macro_values() is not None else ()
    if isinstance(executor, run.LocalExecutor):
        # Popen, no shell. With torchrun/ft NeMo Run's quoting cannot be undone here: the program
        # receives shell-safe args unchanged and others wrapped in one layer of shell quotes.
        return ()
    if _is(executor, "DockerExecutor"):
        return ("nosq", "dq") if nrq else ("shell", "dq")
    gpu_metrics_wrapper = (isinstance(executor, run.SlurmExecutor) and launcher is not None
                           and launcher.nsys_profile and launcher.nsys_gpu_metrics)
    if gpu_metrics_wrapper:
        # NeMo Run's own quotes would close the outer `bash -c '`: use double quotes twice.
        return ("nosq", "dqbash", "dqbash") + tmpl if nrq else ("shell", "sq") + tmpl
    return tmpl if nrq else ("shell",) + tmpl


def encode_arg(arg: str, steps: Sequence[str]) -> str:
    """Encode ``arg`` so that it reaches the program unchanged; ValueError if it cannot."""
    for step in steps:
        arg = _STEPS[step][0](arg)
    return arg


def decode_arg(arg: str, steps: Sequence[str]) -> str:
    """Inverse of ``encode_arg``; raises ValueError for text that encoding could not produce."""
    for step in reversed(steps):
        arg = _STEPS[step][1](arg)
    return arg
