"""Fieller's interval for a ratio of independent means, checked against its definition:
the interval is exactly the set of ratios R that a Welch-type t-test of m1 - R·m2 = 0
does not reject, found here by brute force on a grid."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from fslab.analysis.fieller import fieller_ratio


def _not_rejected(x: list[float], y: list[float], grid: np.ndarray) -> np.ndarray:
    m1, m2 = np.mean(x), np.mean(y)
    v1, v2 = np.var(x, ddof=1) / len(x), np.var(y, ddof=1) / len(y)
    rhat = m1 / m2  # df fixed at the estimate, as the implementation does
    a, b = v1, rhat * rhat * v2
    df = (a + b) ** 2 / (a * a / (len(x) - 1) + b * b / (len(y) - 1))
    t = sps.t.ppf(0.975, df)
    return grid[np.abs(m1 - grid * m2) <= t * np.sqrt(v1 + grid * grid * v2)]


def test_interval_is_the_set_of_ratios_not_rejected() -> None:
    x = [12.0, 14.5, 13.1, 15.2, 12.8]
    y = [4.1, 3.6, 4.4, 3.9]
    f = fieller_ratio(x, y)
    assert f.ratio == pytest.approx(np.mean(x) / np.mean(y))
    assert f.low is not None and f.high is not None
    grid = np.linspace(1.0, 6.0, 50001)
    inside = _not_rejected(x, y, grid)
    assert f.low == pytest.approx(min(inside), abs=2e-4)
    assert f.high == pytest.approx(max(inside), abs=2e-4)
    # asymmetric around the estimate, wider above (the denominator's noise)
    assert f.high - f.ratio > f.ratio - f.low


def test_exact_denominator_reduces_to_a_scaled_mean_interval() -> None:
    x = [10.0, 11.0, 12.5, 9.5]
    f = fieller_ratio(x, [2.0, 2.0, 2.0])
    s = np.std(x, ddof=1) / math.sqrt(len(x))
    t = sps.t.ppf(0.975, len(x) - 1)
    assert f.low == pytest.approx((np.mean(x) - t * s) / 2)
    assert f.high == pytest.approx((np.mean(x) + t * s) / 2)


def test_noisy_denominator_has_no_finite_interval() -> None:
    f = fieller_ratio([5.0, 6.0, 5.5], [0.1, 3.0, -2.5])
    assert f.low is None and f.high is None and "g >= 1" in f.why
    one = fieller_ratio([5.0], [2.0, 2.2])
    assert one.ratio == pytest.approx(5 / 2.1) and not one.bounded and "fewer than 2" in one.why
    with pytest.raises(ValueError, match="zero"):
        fieller_ratio([1.0, 2.0], [0.0, 0.0])
