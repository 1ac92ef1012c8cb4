"""How a figure is written in a terminal table (milliseconds, a share, a long name, a list of
steps): one rule for every terminal rendering of text/."""

from __future__ import annotations

NAME_WIDTH = 70


def ms(us: float | None) -> str:
    return "-" if us is None else f"{us / 1000:,.2f}"


def pct(part: float | None, whole: float | None) -> str:
    return "-" if part is None or not whole else f"{100 * part / whole:.1f} %"


def short(name: str, width: int = NAME_WIDTH) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def step_ranges(steps: list[int]) -> str:
    if not steps:
        return "none"
    if steps == list(range(steps[0], steps[-1] + 1)):
        return f"{steps[0]}-{steps[-1]}" if len(steps) > 1 else str(steps[0])
    return ",".join(map(str, steps))
