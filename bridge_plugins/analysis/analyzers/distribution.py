"""Distribution summaries shared by the analyzers (pandas' ``describe`` figures, without pandas)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Distribution:
    """count, mean, sample std, min, quartiles, p95 and max of a set of values (None when empty)."""

    count: int
    mean: float | None = None
    std: float | None = None
    min: float | None = None
    p25: float | None = None
    median: float | None = None
    p75: float | None = None
    p95: float | None = None
    max: float | None = None


def describe(values: np.ndarray) -> Distribution:
    v = np.asarray(values, dtype=np.float64)
    nan = np.isnan(v)
    if nan.any():  # a copy only then: ``values`` can be millions (a stream's queue lengths)
        v = v[~nan]
    del nan
    if len(v) == 0:
        return Distribution(count=0)
    q = np.percentile(v, [25, 50, 75, 95])
    return Distribution(
        count=len(v),
        mean=float(v.mean()),
        std=float(v.std(ddof=1)) if len(v) > 1 else None,
        min=float(v.min()),
        p25=float(q[0]),
        median=float(q[1]),
        p75=float(q[2]),
        p95=float(q[3]),
        max=float(v.max()),
    )
