"""Statistics against published values, not against the implementation itself."""

import math

import pytest

from fslab.analysis.stats import compare_groups, hedges_g, holm, mann_whitney, summarize, welch_t

# Welch's t-test worked example (two samples of 15; the values used in the Wikipedia
# article on Welch's t-test): t = -2.46, df = 24.9, p = 0.021.
A1 = [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4]
A2 = [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4]


def test_welch_known_values():
    result = welch_t(A1, A2)
    assert result.statistic == pytest.approx(-2.46, abs=0.01)
    assert result.df == pytest.approx(24.9, abs=0.1)
    assert result.p_value == pytest.approx(0.021, abs=0.001)


def test_welch_unequal_sizes_allowed():
    # Unequal sample sizes are the point of Welch's test; they must not be rejected.
    result = welch_t([10.0, 11.0, 12.0], [20.0, 21.0, 19.0, 20.5, 19.5])
    assert result.p_value < 0.001


def test_welch_no_spread():
    assert welch_t([5.0, 5.0], [5.0, 5.0]).p_value == 1.0
    assert welch_t([5.0, 5.0], [6.0, 6.0]).p_value == 0.0


def test_welch_needs_two_values():
    with pytest.raises(ValueError):
        welch_t([1.0], [1.0, 2.0])


def test_holm_known_values():
    # Sorted p: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 -> max(0.06, 0.04).
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])


def test_summary_interval():
    s = summarize([1, 2, 3, 4, 5])
    assert s.mean == 3
    assert s.sd == pytest.approx(math.sqrt(2.5))
    # t(0.975, 4) = 2.7764
    assert s.ci_half_width == pytest.approx(2.7764 * math.sqrt(2.5) / math.sqrt(5), rel=1e-4)
    assert s.ci == pytest.approx((3 - s.ci_half_width, 3 + s.ci_half_width))


def test_summary_single_value_has_no_interval():
    s = summarize([7.0])
    assert s.ci is None and s.sd is None and s.n == 1


def test_hedges_g():
    # d = (mean difference) / pooled sd = 2 / 1 = 2, J = 1 - 3/(4*8-9) = 0.8696
    g = hedges_g([3, 4, 5, 4], [1, 2, 3, 2])
    pooled = math.sqrt((3 * (2 / 3) + 3 * (2 / 3)) / 6)
    assert g == pytest.approx(2 / pooled * (1 - 3 / 23))


def test_compare_groups_holm_and_direction():
    groups = {"a": [100, 101, 99, 100], "b": [90, 91, 89, 90], "c": [100, 99, 101, 100.5]}
    result = {c.a: c for c in compare_groups(groups, "a")}
    assert result["b"].significant and result["b"].ratio == pytest.approx(0.9)
    assert not result["c"].significant
    assert result["b"].p_adjusted >= result["b"].p_value


def test_mann_whitney_exact_small_sample():
    # Complete separation of 3 vs 3: U = 0; exact two-sided p = 2 / C(6,3) = 0.1.
    result = mann_whitney([1, 2, 3], [4, 5, 6])
    assert result.statistic == 0 and result.p_value == pytest.approx(0.1)
