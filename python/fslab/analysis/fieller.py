"""The ratio of two independent means with Fieller's interval — the aged/empty latency
ratios of seed 003 (its Figures 8 and 9) and "how many times slower" statements.

Method: Fieller, "Some problems in interval estimation", J. R. Stat. Soc. B 16 (1954)
175–185. For sample means m1, m2 over n1, n2 runs with squared standard errors
v1 = s1²/n1, v2 = s2²/n2 (independent samples, so no covariance term), the ratios R with
(m1 - R·m2)² <= t²·(v1 + R²·v2) form the interval: the roots of
(m2² - t²v2)·R² - 2·m1·m2·R + (m1² - t²v1) = 0. It is bounded only when the denominator's
mean is itself clearly away from zero (g = t²·v2/m2² < 1); otherwise no finite interval
exists and none is given. Degrees of freedom: Welch–Satterthwaite on v1 + R²·v2 at the
estimated ratio. Unlike the delta method, the interval is exact under normal means and
asymmetric where it should be.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .stats import t_quantile

METHOD = "Fieller's interval (independent means, Welch–Satterthwaite df)"


@dataclass(frozen=True)
class FiellerRatio:
    ratio: float  # mean(numerator) / mean(denominator)
    low: float | None  # None: no finite interval (see why)
    high: float | None
    n_numerator: int
    n_denominator: int
    why: str = ""  # why there is no interval, in words

    @property
    def bounded(self) -> bool:
        return self.low is not None and self.high is not None


def fieller_ratio(numerator: Sequence[float], denominator: Sequence[float],
                  confidence: float = 0.95) -> FiellerRatio:
    """mean(numerator) / mean(denominator) with Fieller's interval. Raises ValueError when a
    side is empty or the denominator's mean is zero (no ratio at all)."""
    x, y = np.asarray(numerator, float), np.asarray(denominator, float)
    if x.size == 0 or y.size == 0:
        raise ValueError("a ratio needs values on both sides")
    m1, m2 = float(x.mean()), float(y.mean())
    if m2 == 0:
        raise ValueError("the denominator's mean is zero")
    ratio = m1 / m2
    n1, n2 = int(x.size), int(y.size)
    if n1 < 2 or n2 < 2:
        return FiellerRatio(ratio, None, None, n1, n2, "fewer than 2 runs on a side")
    v1, v2 = float(x.var(ddof=1)) / n1, float(y.var(ddof=1)) / n2
    if v1 == 0 and v2 == 0:
        return FiellerRatio(ratio, ratio, ratio, n1, n2)
    # Welch–Satterthwaite for the pivot m1 - R·m2 at R = the estimate.
    a, b = v1, ratio * ratio * v2
    df = (a + b) ** 2 / ((a * a / (n1 - 1) if a else 0.0) + (b * b / (n2 - 1) if b else 0.0))
    t = t_quantile(0.5 + confidence / 2, df)
    g = t * t * v2 / (m2 * m2)
    if g >= 1:
        return FiellerRatio(ratio, None, None, n1, n2,
                            "the denominator's mean is not clearly away from zero (Fieller g >= 1)")
    qa = m2 * m2 - t * t * v2
    qb = -2 * m1 * m2
    qc = m1 * m1 - t * t * v1
    disc = qb * qb - 4 * qa * qc
    root = math.sqrt(max(disc, 0.0))
    low, high = sorted(((-qb - root) / (2 * qa), (-qb + root) / (2 * qa)))
    return FiellerRatio(ratio, low, high, n1, n2)
