"""Whether an error is a Ctrl-C in disguise.

Python 3.11 turns a KeyboardInterrupt raised while a class is built (a dataclass field's
``__set_name__``, common during imports) into ``RuntimeError: Error calling __set_name__``, with
the KeyboardInterrupt as its cause; a Ctrl-C must still end in one line and exit 130.
"""

from __future__ import annotations


def caused_by_ctrl_c(error: BaseException) -> bool:
    """Whether a KeyboardInterrupt is ``error`` or behind it (its cause or context, transitively)."""
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False
