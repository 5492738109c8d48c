"""Means with 95% confidence intervals from repetitions (Student's t, two-sided).

The t quantiles are tabulated (no SciPy dependency for one number): exact for 1-30 degrees of
freedom, interpolated linearly in 1/df beyond (error below 0.001).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

# t_{0.975, df} for df = 1..30 (any statistics table), then anchors for larger df.
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
_ANCHORS = [(30, 2.042), (40, 2.021), (60, 2.000), (120, 1.980), (math.inf, 1.960)]


def t975(df: int) -> float:
    """Two-sided 95% quantile of Student's t with ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError("df must be >= 1")
    if df <= 30:
        return _T975[df - 1]
    for (d0, t0), (d1, t1) in zip(_ANCHORS, _ANCHORS[1:]):
        if df <= d1:
            w = (1 / d0 - 1 / df) / (1 / d0 - (0 if d1 == math.inf else 1 / d1))
            return t0 + w * (t1 - t0)
    return 1.960


@dataclass(frozen=True)
class Estimate:
    mean: float
    n: int
    half_width: float | None  # None with one value: no interval

    @property
    def low(self) -> float | None:
        return None if self.half_width is None else self.mean - self.half_width

    @property
    def high(self) -> float | None:
        return None if self.half_width is None else self.mean + self.half_width


def estimate(values: Iterable[float]) -> Estimate | None:
    xs = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not xs:
        return None
    n = len(xs)
    mean = sum(xs) / n
    if n == 1:
        return Estimate(mean, 1, None)
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    return Estimate(mean, n, t975(n - 1) * sd / math.sqrt(n))
