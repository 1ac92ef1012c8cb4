"""QuotingChain: the quoting layers a string passes through between a plugin and the program.

A run.Script arg or an nsys option passes through up to four stages: NeMo Run's ``shlex.quote``
of script args, the scheduler's macro substitution (``$$``, ``${img_root}``), the executor's
delivery (Popen, a bash script, docker's ``bash -c``) and, on Slurm with GPU metrics, one more
``bash -c``. A chain lists the layers the plugin applies, innermost first, so the program gets
exactly the intended string; ``decode`` reads back what a task already has. A string that no
encoding can carry raises ValueError.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass

import nemo_run as run
from nemo_run.core.execution.launcher import Launcher

from bridge_plugins.plugins.executor_traits import quotes_script_args, traits_for


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
        raise ValueError(
            f"script arg {s!r} contains a single quote; NeMo Run's launcher quoting breaks it "
            f"on this executor (Docker, or Slurm with nsys GPU metrics, with torchrun)"
        )
    return s


def _unshell(s: str) -> str:
    parts = shlex.split(s)
    if len(parts) != 1:
        raise ValueError("not one shell word")
    return parts[0]


LAYERS: dict[str, tuple[Callable[[str], str], Callable[[str], str]]] = {
    # name: (encode, decode)
    "shell": (shlex.quote, _unshell),  # one bash word
    "single_quoted": (lambda s: s.replace("'", "'\\''"), lambda s: s.replace("'\\''", "'")),  # inside '...'
    "double_quoted": (lambda s: s.replace("\\", "\\\\").replace('"', '\\"'), _undq),  # inside shlex's "..."
    "no_single_quote": (_no_single_quote, _no_single_quote),  # refuse what NeMo Run's own quotes break
    "bash_double_quoted": (_dq_bash, _undq_bash),  # one bash word, in double quotes
    "macros": (lambda s: s.replace("$", "$$"), lambda s: s.replace("$$", "$")),  # string.Template
}


@dataclass(frozen=True)
class QuotingChain:
    """Layers a plugin applies to a string (innermost first) so that it reaches the program intact."""

    layers: tuple[str, ...] = ()

    @classmethod
    def for_executor(
        cls, executor: run.Executor, launcher: Launcher | None, *, script_arg: bool, owner: str = "bridge_plugins"
    ) -> QuotingChain:
        """The chain on ``executor`` when it runs ``launcher`` (None: no launcher).

        ``script_arg``: True for a run.Script arg (NeMo Run's launcher components shell-quote
        those), False for launcher options such as nsys's.
        """
        traits = traits_for(executor, owner)
        launcher_quotes = script_arg and quotes_script_args(launcher)
        macros = ("macros",) if traits.macros else ()
        if traits.delivery == "argv":
            # Popen, no shell. NeMo Run's quotes (torchrun, ft_launcher) reach the job; a plugin
            # routes it through runtime/entry/unquote_argv.py, which undoes them (argv_fixes).
            return cls(macros)
        if traits.delivery == "docker":
            return cls(("no_single_quote", "double_quoted") if launcher_quotes else ("shell", "double_quoted"))
        if traits.nsys_gpu_metrics and launcher is not None and launcher.nsys_profile and launcher.nsys_gpu_metrics:
            # Inside NeMo Run's `bash -c '...'`: its own quotes would close ours, so double quotes twice.
            if launcher_quotes:
                return cls(("no_single_quote", "bash_double_quoted", "bash_double_quoted") + macros)
            return cls(("shell", "single_quoted") + macros)
        return cls(macros if launcher_quotes else ("shell",) + macros)

    def encode(self, text: str) -> str:
        """``text`` encoded so that it reaches the program unchanged; ValueError if it cannot."""
        for layer in self.layers:
            text = LAYERS[layer][0](text)
        return text

    def decode(self, text: str) -> str:
        """Inverse of ``encode``; ValueError for text that encoding could not produce."""
        for layer in reversed(self.layers):
            text = LAYERS[layer][1](text)
        return text

    def decode_or_none(self, text: str) -> str | None:
        try:
            return self.decode(text)
        except ValueError:
            return None
