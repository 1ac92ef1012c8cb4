"""The nsys wrapper on the executor's launcher: options, report placement, quoting, GPU metrics.

``Launcher.get_nsys_prefix(profile_dir)`` writes to ``<profile_dir>/<nsys_folder>/<nsys_filename>``
and NeMo Run joins the options into the launch command unquoted (into the sbatch script on Slurm),
so every user-given value is encoded with the executor's QuotingChain here, and what no shell can
carry (control characters such as a newline) is refused when the plugin is constructed.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import nemo_run as run
from nemo_run.core.execution.launcher import Launcher, Torchrun

from bridge_plugins.plugins.edits import Edit, warn
from bridge_plugins.plugins.executor_traits import CONTAINER_JOB_DIR, peek_launcher, traits_for
from bridge_plugins.plugins.nsys_binary import plan_nsys_binary_check
from bridge_plugins.plugins.nsys_entry import route_nsys_through_wrapper
from bridge_plugins.plugins.nsys_outcome import say_why_failed
from bridge_plugins.plugins.quoting import QuotingChain

GPU_METRICS_ENV = "GPU_METRICS_NODES"
"""NeMo Run's Slurm nsys wrapper samples GPU metrics on nodes whose SLURM_NODEID is listed here."""

# nsys options NeMo Run emits itself before nsys_extra_args; repeating them confuses nsys.
RESERVED_NSYS_FLAGS = {
    "-o": "placement is set per executor",
    "--output": "placement is set per executor",
    "-t": "use nsys_trace",
    "--trace": "use nsys_trace",
    "-s": "NeMo Run sets '-s none'",
    "--sample": "NeMo Run sets '-s none'",
}

TRACE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
"""An nsys ``-t`` API name (cuda, nvtx, osrt, python-gil ...): NeMo Run joins them with ','."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(kw_only=True)
class ContainerNsysLauncher(Launcher):
    """``Launcher`` whose nsys report goes to the container's job dir (Docker, Skypilot)."""

    def get_nsys_prefix(self, profile_dir: str) -> list[str] | None:
        return super().get_nsys_prefix(profile_dir=CONTAINER_JOB_DIR)


@dataclass(kw_only=True)
class ContainerNsysTorchrun(Torchrun):
    """``Torchrun`` whose nsys report goes to the container's job dir (Docker, Skypilot)."""

    def get_nsys_prefix(self, profile_dir: str) -> list[str] | None:
        return super().get_nsys_prefix(profile_dir=CONTAINER_JOB_DIR)


_CONTAINER_LAUNCHERS = {Launcher: ContainerNsysLauncher, Torchrun: ContainerNsysTorchrun}


def validate_nsys_trace(owner: str, trace) -> None:
    if not isinstance(trace, (list, tuple)) or not trace:
        raise ValueError(
            f"{owner}.nsys_trace={trace!r} must be a non-empty list of nsys trace names, e.g. ['nvtx', 'cuda']"
        )
    for name in trace:
        if not isinstance(name, str) or not TRACE_NAME.fullmatch(name):
            raise ValueError(
                f"{owner}.nsys_trace={list(trace)!r} holds {name!r}, which is not an nsys trace name "
                f"(letters, digits, '-', '_', '.'); e.g. ['nvtx', 'cuda']"
            )


def _flag_groups(args: Sequence[str], name_of: Callable[[str], str] = str) -> list[tuple[str, list[str]]]:
    """Split nsys options into (flag name, tokens): '--a=1' and '--a 1' both name '--a'.

    ``name_of`` reads a token back (decoded) before its flag name is taken.
    """
    groups: list[tuple[str, list[str]]] = []
    for tok in args:
        plain = name_of(tok)
        if plain.startswith("-") or not groups:
            groups.append((plain.split("=", 1)[0], [tok]))
        else:
            groups[-1][1].append(tok)
    return groups


def validate_nsys_extra_args(owner: str, args) -> None:
    if not isinstance(args, (list, tuple)) or not all(isinstance(a, str) for a in args):
        raise TypeError(f"{owner}.nsys_extra_args must be a list of str, got {args!r}; e.g. ['--capture-range=none']")
    for arg in args:
        if _CONTROL.search(arg):
            raise ValueError(
                f"{owner}.nsys_extra_args={list(args)!r} holds {arg!r}, whose control character "
                f"(newline, tab, ...) cannot be carried safely through the launch script; remove it"
            )
    for name, _tokens in _flag_groups(args):
        if not name.startswith("-"):
            raise ValueError(
                f"{owner}.nsys_extra_args={list(args)!r}: {name!r} is not an nsys option; "
                f"each entry must start with '-' (values may follow their flag)"
            )
        if name in RESERVED_NSYS_FLAGS:
            raise ValueError(
                f"{owner}.nsys_extra_args={list(args)!r} sets {name!r}: {RESERVED_NSYS_FLAGS[name]}; remove it"
            )


def merge_nsys_args(base: Sequence[str], user: Sequence[str], chain: QuotingChain | None = None) -> list[str]:
    """``base`` with each flag the user also gives replaced in place; new user flags appended.

    ``user`` is already encoded with ``chain``; flag names are compared decoded. Idempotent:
    merging the same user args again yields the same list.
    """
    chain = chain if chain is not None else QuotingChain()

    def name_of(token: str) -> str:
        decoded = chain.decode_or_none(token)
        return token if decoded is None else decoded

    user_groups = dict(_flag_groups(user, name_of))
    out: list[str] = []
    seen = set()
    for name, tokens in _flag_groups(base, name_of):
        if name in seen:
            continue
        seen.add(name)
        out += user_groups.get(name, tokens)
    for name, tokens in _flag_groups(user, name_of):
        if name not in seen:
            seen.add(name)
            out += tokens
    return out


def requoted(owner: str, tokens: Sequence[str], old: QuotingChain, new: QuotingChain) -> list[str]:
    """Options already on the launcher (an earlier NsysPlugin's, the user's), re-quoted for ``new``.

    GPU metrics add a ``bash -c '...'`` level on Slurm: a token quoted for the old chain would
    close that wrapper early. ValueError naming a token that the old chain cannot decode.
    """
    if old == new:
        return list(tokens)
    out = []
    for token in tokens:
        raw = old.decode_or_none(token)
        if raw is None:
            raise ValueError(
                f"{owner}: the launcher's nsys option {token!r} cannot be re-quoted for nsys GPU metrics' "
                f"bash -c wrapper; pass it through NsysPlugin(nsys_extra_args=[...]) unquoted instead"
            )
        out.append(new.encode(raw))
    return out


def plan_nsys(
    owner: str,
    executor: run.Executor,
    *,
    trace: Sequence[str],
    extra_args: Sequence[str],
    gpu_metrics: bool,
    profile_ranks: Sequence[int],
) -> tuple[Edit, Launcher]:
    """Turn on the launcher's nsys wrapper, with a per-executor report location and quoting.

    Returns the edit and the launcher the executor will have (Script args are encoded for it).
    The new launcher is a copy with the same fields; Slurm's one-time launcher setup is
    unaffected because the launcher type does not change (except for container executors,
    which have no launcher setup).
    """
    traits = traits_for(executor, owner)
    launcher = peek_launcher(executor) or Launcher()
    new_cls = type(launcher)
    if traits.nsys_report_in_container:
        if type(launcher) in _CONTAINER_LAUNCHERS:
            new_cls = _CONTAINER_LAUNCHERS[type(launcher)]
        elif type(launcher) not in _CONTAINER_LAUNCHERS.values():
            warn(
                f"{owner}: {type(executor).__name__} with launcher {type(launcher).__name__} writes the "
                f"nsys report under the host job dir, which the container does not see"
            )
    require_nsys = plan_nsys_binary_check(owner, executor, traits)
    if gpu_metrics and not traits.nsys_gpu_metrics:
        warn(
            f"{owner}: nsys_gpu_metrics is only supported on SlurmExecutor by NeMo Run; "
            f"ignored on {type(executor).__name__}"
        )
    fields = {f.name: copy.deepcopy(getattr(launcher, f.name)) for f in dataclasses.fields(launcher) if f.init}
    fields["nsys_profile"] = True
    if traits.nsys_filename:
        fields["nsys_filename"] = traits.nsys_filename
    if traits.nsys_gpu_metrics:
        fields["nsys_gpu_metrics"] = bool(gpu_metrics) or launcher.nsys_gpu_metrics
    new = new_cls(**fields)
    # The quoting depends on the new launcher (GPU metrics add a bash -c level on Slurm).
    chain = QuotingChain.for_executor(executor, new, script_arg=False, owner=owner)
    new.nsys_trace = [chain.encode(t) for t in trace]
    old_chain = QuotingChain.for_executor(executor, launcher, script_arg=False, owner=owner)
    existing = requoted(owner, launcher.nsys_extra_args, old_chain, chain)
    new.nsys_extra_args = merge_nsys_args(existing, [chain.encode(a) for a in extra_args], chain)

    def edit() -> None:
        executor.launcher = new
        route_nsys_through_wrapper(executor, traits)
        say_why_failed(owner, executor)
        if require_nsys is not None:
            require_nsys()
        if new.nsys_gpu_metrics and traits.nsys_gpu_metrics and GPU_METRICS_ENV not in executor.env_vars:
            executor.get_launcher()  # Slurm's launcher setup fixes nproc_per_node for torchrun
            executor.env_vars[GPU_METRICS_ENV] = _gpu_metrics_nodes(executor, profile_ranks)

    return edit, new


def _gpu_metrics_nodes(executor: run.SlurmExecutor, profile_ranks: Sequence[int]) -> str:
    """Comma-separated SLURM_NODEID list of nodes hosting profiled ranks (no spaces: NeMo Run
    exports env vars unquoted). Call after ``get_launcher()`` so nproc_per_node is final."""
    nnodes = executor.nnodes()
    per_node = max(1, executor.nproc_per_node())
    nodes = (
        range(nnodes) if not profile_ranks else sorted({r // per_node for r in profile_ranks if r // per_node < nnodes})
    )
    return ",".join(str(n) for n in nodes) or "0"
