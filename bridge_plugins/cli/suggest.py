"""A close match for a mistyped name ("did you mean --json?"), as git and pip offer one.

``closest`` is the rule (difflib's ratio, as git's own suggestion is a similarity score);
``SuggestingParser`` applies it to argparse's two mistakes, an unknown flag and an unknown command.
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Iterable

_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)$")


def closest(word: str, candidates: Iterable[str], n: int = 2) -> list[str]:
    """The candidates most like ``word`` (at most ``n``, best first); none when nothing is close."""
    return difflib.get_close_matches(word, list(candidates), n=n, cutoff=0.7)


class SuggestingParser(argparse.ArgumentParser):
    """argparse's parser; a subcommand reports its own unknown flags (its usage, not the top
    level's), and an unknown flag or command names the closest one."""

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:  # nothing here uses parse_known_args to pass arguments on: an extra is a mistake
            flags = [s for s in self._option_string_actions if s.startswith("--")]
            guesses = [g for x in extras if x.startswith("--") for g in closest(x.split("=", 1)[0], flags, n=1)]
            guess = f" (did you mean {', '.join(dict.fromkeys(guesses))}?)" if guesses else ""
            self.error(f"unrecognized arguments: {' '.join(extras)}{guess}")
        return namespace, extras

    def error(self, message: str):
        invalid = _INVALID_CHOICE.search(message)
        if invalid:
            guesses = closest(invalid.group(1), re.findall(r"'([^']*)'", invalid.group(2)), n=1)
            message += f"; did you mean {guesses[0]!r}?" if guesses else ""
        super().error(message)
