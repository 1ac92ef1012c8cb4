"""Which role each instant of a step goes to (torch-tb-profiler's split: step_breakdown.py): the
first of ``ROLES`` busy then, else "other"; and the time an input span waits in it. One step at a
time (:func:`split_step`, the rule) or several at once (:func:`split_steps`, to the bit the same)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from bridge_plugins.analysis.analyzers.step_windows import Spans

ROLES = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec")
"""The plugin's priority order; what none of them covers is ``other``."""
STEPS_AT = 64
"""Steps split at once at most (:func:`split_steps`): a few numpy calls for them all, not a few per step."""
SPANS_AT = 1 << 15
"""Spans in the steps split at once at most, unless one step has more (:func:`groups`)."""


StepSpans = tuple[np.ndarray, np.ndarray, np.ndarray]
"""Spans of several steps, each clipped to its step as ``within`` clips them, in time order: (start,
end, the step's position among those steps)."""


def clipped(spans: Spans, lo: np.ndarray, hi: np.ndarray) -> StepSpans:
    """``within(spans, lo[k], hi[k])`` for each step k, one after the other."""
    s, e = spans
    a, counts = _reaching(spans, lo, hi)
    k = np.repeat(np.arange(len(lo)), counts)
    at = np.arange(len(k)) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(a, counts)
    return np.clip(s[at], lo[k], hi[k]), np.clip(e[at], lo[k], hi[k]), k


def stacked(per_step: list[Spans]) -> StepSpans:
    """Each step's spans (already clipped to it), one after the other."""
    k = np.repeat(np.arange(len(per_step)), [len(s) for s, _ in per_step])
    return np.concatenate([s for s, _ in per_step]), np.concatenate([e for _, e in per_step]), k


def finite(lo: np.ndarray, hi: np.ndarray, *spans: StepSpans) -> bool:
    return all(bool(np.isfinite(x).all()) for x in (lo, hi, *(a for s, e, _ in spans for a in (s, e))))


def _covers_in_step(spans: StepSpans, t: np.ndarray, step: np.ndarray) -> np.ndarray:
    """:func:`_covers` of each time ``t`` by the spans of its ``step``: the steps follow one another
    in time, so the last span starting at or before t is its step's, or t is not covered there."""
    s, e, k = spans
    if not len(s):
        return np.zeros(len(t), dtype=bool)
    i = np.searchsorted(s, t, side="right") - 1
    j = np.maximum(i, 0)
    return (i >= 0) & (k[j] == step) & (t < e[j])


def split_steps(
    lo: np.ndarray, hi: np.ndarray, mine: list[StepSpans], waits: StepSpans
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`split_step` of several consecutive steps at once (finite times only), to the bit: the
    same edges, midpoints and lengths in the same order per step, each step's sums added in that
    order (``np.bincount`` by step and role) and each wait summed over its own step's lengths."""
    n, width = len(lo), len(ROLES) + 1
    parts = [lo, hi, *(x for s, e, _ in (*mine, waits) for x in (s, e))]
    values = np.concatenate(parts)
    steps = np.concatenate([np.arange(n), np.arange(n), *(k for _, _, k in (*mine, waits) for _ in (0, 1))])
    order = np.lexsort((values, steps))
    values, steps = values[order], steps[order]
    new = np.ones(len(values), dtype=bool)
    new[1:] = (values[1:] != values[:-1]) | (steps[1:] != steps[:-1])
    edges, steps = values[new], steps[new]  # np.unique of each step's edges, one step after the other
    pair = steps[1:] == steps[:-1]
    mids, lengths, step = ((edges[:-1] + edges[1:]) / 2)[pair], np.diff(edges)[pair], steps[:-1][pair]
    if bool(np.all((edges[:-1][pair] < mids) & (mids < edges[1:][pair]))):
        # each midpoint strictly inside its piece: a span covers it where it covers the whole piece
        edge_of = np.empty(len(order), dtype=np.int64)
        edge_of[order] = np.cumsum(new) - 1  # each value's edge
        at = np.cumsum([0, *map(len, parts)])
        pieces = len(edges) - 1

        def covered(j: int) -> np.ndarray:  # the pieces inside a span of the j-th of (*mine, waits)
            begins = np.bincount(edge_of[at[2 + 2 * j] : at[3 + 2 * j]], minlength=pieces + 1)
            ends = np.bincount(edge_of[at[3 + 2 * j] : at[4 + 2 * j]], minlength=pieces + 1)
            return (np.cumsum(begins - ends)[:-1] > 0)[pair]

    else:  # a midpoint rounded onto an edge (edges a float or two apart): as split_step finds it

        def covered(j: int) -> np.ndarray:
            return _covers_in_step((*mine, waits)[j], mids, step)

    role = np.full(len(mids), len(ROLES), dtype=np.int64)
    for r in reversed(range(len(ROLES))):
        role[covered(r)] = r
    waiting = covered(len(mine)) & (role > ROLES.index("communication"))
    sums = np.bincount(step * width + role, lengths, n * width).reshape(n, width)
    waited, bounds = lengths[waiting], np.searchsorted(step[waiting], np.arange(n + 1))
    wait = np.array([float(waited[bounds[k] : bounds[k + 1]].sum()) for k in range(n)])
    return sums, wait


def split_step(lo: float, hi: float, mine: list[Spans], waits: Spans) -> tuple[np.ndarray, float]:
    """One step's time per role (ROLES, then other) and its input wait: every instant of [lo, hi]
    goes to the first role busy then (``mine``: each role's spans within it, ``waits``: the input spans')."""
    edges = np.unique(np.concatenate([[lo, hi], *(x for u in mine for x in u), *waits]))
    mids, lengths = (edges[:-1] + edges[1:]) / 2, np.diff(edges)
    role = np.full(len(mids), len(ROLES), dtype=np.int8)
    for r in reversed(range(len(ROLES))):
        role[_covers(mine[r], mids)] = r
    waiting = _covers(waits, mids) & (role > ROLES.index("communication"))
    return np.bincount(role, lengths, len(ROLES) + 1), float(lengths[waiting].sum())


def _covers(spans: Spans, t: np.ndarray) -> np.ndarray:
    s, e = spans
    i = np.searchsorted(s, t, side="right") - 1
    return (i >= 0) & (t < e[np.maximum(i, 0)]) if len(s) else np.zeros(len(t), dtype=bool)


def span_counts(unions: list[Spans], starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per step, how many spans of the ``unions`` reach into it (what ``within`` keeps of each)."""
    counts = np.zeros(len(starts), dtype=np.int64)
    for spans in unions:
        counts += _reaching(spans, starts, ends)[1]
    return counts


def _reaching(spans: Spans, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per window [lo, hi], the first of the sorted disjoint ``spans`` that reaches into it and how
    many do: ``within``'s rule (ending after lo, starting before hi), for many windows at once."""
    s, e = spans
    first = np.searchsorted(e, lo, side="right")
    return first, np.maximum(np.searchsorted(s, hi, side="left") - first, 0)


def groups(runtime: Iterator[Spans], counts: np.ndarray) -> Iterator[tuple[int, list[Spans]]]:
    """Consecutive steps to split at once: (the first one's position, each one's runtime spans), at
    most ``STEPS_AT`` steps and ``SPANS_AT`` spans (``counts`` and the runtime's) unless one step
    has more: memory bounded by a few steps' spans however long the steps are."""
    a, pending = 0, None
    while a < len(counts):
        group: list[Spans] = []
        total = 0
        while a + len(group) < len(counts) and len(group) < STEPS_AT:
            spans = pending if pending is not None else next(runtime)
            pending = None
            size = int(counts[a + len(group)]) + len(spans[0])
            if group and total + size > SPANS_AT:
                pending = spans
                break
            group.append(spans)
            total += size
        yield a, group
        a += len(group)
