"""Fit an ``nsys profile`` command line to the nsys installed where the job runs (standard library only).

Options that nsys does not know (``nsys profile --help``) are dropped, unless the window needs
them (:data:`NEEDED`: then one error line); on a node without a GPU the capture range becomes
the window's NVTX range, since cudaProfilerApi never opens there. See docs/plugins.md "nsys".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bridge_plugins.config.errors import BridgePluginsError
from bridge_plugins.jobdir.names import NSYS_WINDOW_RANGE

NEEDED = ("--output", "--trace", "--capture-range", "--capture-range-end")
"""Options without which the report would not be the window's (or not be written where expected)."""

_HELP_LINE = re.compile(r"^\s+(?:(-[A-Za-z]), )?(--[a-z][a-z0-9-]*)(\[\|?[a-z|]*\])?(=)?")
_SHORT_FALLBACK = {"-s": "--sample", "-t": "--trace", "-o": "--output", "-c": "--capture-range", "-p": "--nvtx-capture"}


@dataclass(frozen=True)
class NsysHelp:
    """What one nsys binary's ``nsys profile --help`` says it knows."""

    version: str
    long_names: frozenset[str]
    short_names: dict[str, str] = field(default_factory=dict)
    """Short option -> its long name (``-o`` -> ``--output``)."""

    def long_name(self, name: str) -> str:
        return self.short_names.get(name, _SHORT_FALLBACK.get(name, name))

    def knows(self, name: str) -> bool:
        return self.long_name(name) in self.long_names


def parse_help(text: str, version: str) -> NsysHelp:
    """Options listed by ``nsys profile --help`` (``--nvtx-domain-[include|exclude]=`` is two)."""
    longs: set[str] = set()
    shorts: dict[str, str] = {}
    for line in text.splitlines():
        m = _HELP_LINE.match(line)
        if not m:
            continue
        short, name, alternatives = m.group(1), m.group(2), m.group(3)
        if alternatives:
            longs.update(name + alt for alt in alternatives.strip("[]").split("|") if alt)
        else:
            longs.add(name)
        if short:
            shorts[short] = name
    return NsysHelp(version=version, long_names=frozenset(longs), short_names=shorts)


@dataclass(frozen=True)
class Option:
    """One nsys option as written: its tokens (``['-o', 'x']`` or ``['--a=1']``) and long name."""

    tokens: tuple[str, ...]
    name: str

    @property
    def value(self) -> str | None:
        if len(self.tokens) == 2:
            return self.tokens[1]
        return self.tokens[0].split("=", 1)[1] if "=" in self.tokens[0] else None


class OptionsError(BridgePluginsError, ValueError):
    """The command line cannot be fitted to this nsys; the message is the one line to print."""


def split_command(args: list[str], nsys: NsysHelp) -> tuple[list[Option], list[str]]:
    """``profile`` options and the profiled command. Every nsys option takes a value: ``--a=1``
    is one token; ``-o x`` and ``--output x`` (a name this nsys knows) take the next token too."""
    if not args or args[0] != "profile":
        raise OptionsError(f"expected 'profile OPTIONS... COMMAND...', got {args[:1]!r}")
    options: list[Option] = []
    i = 1
    while i < len(args) and args[i].startswith("-"):
        token = args[i]
        name = nsys.long_name(token.split("=", 1)[0])
        if "=" in token:
            options.append(Option((token,), name))
            i += 1
        elif nsys.knows(token) and i + 1 < len(args):
            options.append(Option((token, args[i + 1]), name))
            i += 2
        else:
            raise OptionsError(
                f"nsys {nsys.version} does not know the option {token!r}, and without '=' its value "
                f"cannot be told from the command: write it as {token}=VALUE (then it is dropped here)"
            )
    if i >= len(args):
        raise OptionsError("no command to profile after the nsys options")
    return options, args[i:]


@dataclass(frozen=True)
class Plan:
    """The options to run nsys with, what was dropped, and what the job's environment needs."""

    options: list[Option]
    dropped: list[Option]
    cpu_capture: bool
    env: dict[str, str]

    def argv(self, command: list[str]) -> list[str]:
        return ["profile", *(t for o in self.options for t in o.tokens), *command]


def plan(options: list[Option], nsys: NsysHelp, *, gpu: bool) -> Plan:
    """Drop what ``nsys`` does not know (OptionsError for a NEEDED one); without a GPU, capture the
    window's NVTX range instead of cudaProfilerApi (and leave out CPU context-switch tracing,
    which hung 2022.4's capture on our CPU-only machines, about one run in two)."""
    kept = [o for o in options if nsys.knows(o.name)]
    dropped = [o for o in options if not nsys.knows(o.name)]
    for o in dropped:
        if o.name in NEEDED:
            raise OptionsError(
                f"nsys {nsys.version} does not know {o.name}, which profiling the window needs: "
                f"use an Nsight Systems whose 'nsys profile --help' lists it (2022.4 or newer does)"
            )
    by_name = {o.name: o for o in kept}
    cuda_range = by_name.get("--capture-range")
    cpu = not gpu and cuda_range is not None and cuda_range.value == "cudaProfilerApi"
    env: dict[str, str] = {}
    if cpu:
        kept = [o for o in kept if o.name not in ("--capture-range", "--nvtx-capture")]
        kept += [Option(("--capture-range=nvtx",), "--capture-range")]
        kept += [Option((f"--nvtx-capture={NSYS_WINDOW_RANGE}",), "--nvtx-capture")]
        if "--cpuctxsw" not in by_name and nsys.knows("--cpuctxsw"):
            kept += [Option(("--cpuctxsw=none",), "--cpuctxsw")]
        trace = by_name.get("--trace")
        if trace is not None and "nvtx" not in (trace.value or "").split(","):
            kept = [o if o is not trace else Option(("-t", f"{trace.value},nvtx"), "--trace") for o in kept]
        env["NSYS_NVTX_PROFILER_REGISTER_ONLY"] = "0"  # capture a range by its plain (unregistered) text
    return Plan(options=kept, dropped=dropped, cpu_capture=cpu, env=env)
