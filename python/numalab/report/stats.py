"""Means with 95% confidence intervals from repetitions (Student's t, two-sided, quantile from
``scipy.stats.t``). Repetitions that all gave the same value have no interval: the estimate says
they were identical rather than show a zero-width interval as if it measured uncertainty."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable


@lru_cache(maxsize=256)
def t975(df: int) -> float:
    """Two-sided 95% quantile of Student's t with ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError("df must be >= 1")
    from scipy.stats import t

    return float(t.ppf(0.975, df))


@dataclass(frozen=True)
class Estimate:
    mean: float
    n: int
    half_width: float | None  # None with one value, or when every value is the same
    identical: bool = False  # n > 1 values, all equal
    baseline: bool = False  # a baseline's speedup over itself: 1 by definition, whatever its runs did

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
    # Equal up to floating-point rounding (a speedup computed from identical times in another
    # order) is identical too: an interval of 1e-16 would only show the arithmetic's noise.
    if max(xs) - min(xs) <= 1e-12 * max(abs(mean), 1e-300):
        return Estimate(mean, n, None, identical=True)
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    return Estimate(mean, n, t975(n - 1) * sd / math.sqrt(n))
