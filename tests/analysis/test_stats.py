"""Statistics against published values, not against the implementation itself."""

import math

import numpy as np
import pytest
from scipy import stats as sps

from fslab.analysis.stats import (
    MIN_N_FOR_VERDICT,
    NoVerdict,
    compare_groups,
    hedges_g,
    holm,
    mann_whitney,
    summarize,
    t_quantile,
    t_two_sided_p,
    welch_t,
)

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


def test_welch_no_spread_is_no_verdict():
    # [5,5] vs [6,6] used to give p = 0 (and an asterisk); zero pooled variance has no answer.
    for a, b in (([5.0, 5.0], [6.0, 6.0]), ([5.0, 5.0], [5.0, 5.0]), ([5.0] * 4, [6.0] * 3)):
        with pytest.raises(NoVerdict, match="zero variance"):
            welch_t(a, b)


def test_welch_sign_follows_mean_a_minus_mean_b():
    low, high = [1.0, 2.0, 3.0], [7.0, 8.0, 10.0]
    assert welch_t(low, high).statistic < 0 < welch_t(high, low).statistic
    # Against scipy's own Welch test (equal_var=False).
    ref = sps.ttest_ind(low, high, equal_var=False)
    assert welch_t(low, high).statistic == pytest.approx(ref.statistic)
    assert welch_t(low, high).p_value == pytest.approx(ref.pvalue)


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


def test_compare_groups_refuses_dishonest_verdicts():
    groups = {"a": [5.0, 5.0, 5.0], "b": [6.0, 6.0, 6.0], "c": [5.0, 6.0], "d": [4.0, 5.0, 6.0]}
    result = {c.a: c for c in compare_groups(groups, "a")}
    assert not result["b"].significant and result["b"].p_value is None
    assert "zero variance" in (result["b"].untested or "")
    assert result["c"].p_value is None and "fewer than 3" in (result["c"].untested or "")
    assert result["d"].untested is None and result["d"].p_value == pytest.approx(1.0)
    # n = 2 only when the caller asks for it.
    asked = {c.a: c for c in compare_groups({"a": [1.0, 2.0], "b": [10.0, 11.0]}, "a", min_n=2)}
    assert asked["b"].untested is None and asked["b"].p_value is not None
    with pytest.raises(ValueError):
        compare_groups(groups, "a", min_n=1)


def _false_positive_rate(n: int, draws: int, rng: np.random.Generator, rounded: bool,
                         sd: float, min_n: int) -> float:
    """Share of H0 draws (three groups from one distribution, as in a three-file-system
    row) in which compare_groups calls any difference significant."""
    hits = 0
    for _ in range(draws):
        data = rng.normal(100.0, sd, size=(3, n))
        if rounded:
            data = np.round(data)
        groups = {"x": list(data[0]), "y": list(data[1]), "z": list(data[2])}
        hits += any(c.significant for c in compare_groups(groups, "x", min_n=min_n))
    return hits / draws


@pytest.mark.parametrize("rounded,sd", [(False, 1.0), (True, 0.4), (True, 1.0), (True, 3.0)])
def test_false_positive_rate_stays_nominal_under_h0(rounded: bool, sd: float) -> None:
    """Under H0 the family-wise false-positive rate of a row must stay at or below α = 5%
    (plus 2% slack for simulation noise: 2,000 draws give a standard error of 0.5%).
    Integer rounding with sd ~ 0.4 is the case that made n = 2 "significant" 12% of
    the time; n < 3 and zero-variance groups get no verdict, so count as not significant."""
    rng = np.random.default_rng(20260410)
    for n in range(2, 11):
        rate = _false_positive_rate(n, 2000, rng, rounded, sd, MIN_N_FOR_VERDICT)
        assert rate <= 0.07, f"n={n}, rounded={rounded}, sd={sd}: {rate:.3f}"


def test_false_positive_rate_at_n2_when_asked_continuous() -> None:
    rng = np.random.default_rng(7)
    assert _false_positive_rate(2, 2000, rng, False, 1.0, min_n=2) <= 0.07


def test_mann_whitney_exact_without_ties_beyond_n8():
    # scipy's default switches to the normal approximation above n = 8; the exact null
    # distribution is what we promise. Complete separation of 9 vs 9: p = 2 / C(18, 9).
    result = mann_whitney(list(range(9)), list(range(100, 109)))
    assert result.method == "mann-whitney (exact)"
    assert result.p_value == pytest.approx(2 / math.comb(18, 9))


def test_mann_whitney_with_ties_is_an_exact_permutation_test():
    a, b = [1, 2, 2, 3], [2, 3, 4, 4, 5]
    result = mann_whitney(a, b)
    assert result.method == "mann-whitney (permutation, exact)"
    # Reference: scipy's permutation test on U over all 126 splits.
    ref = sps.mannwhitneyu(a, b, alternative="two-sided",
                           method=sps.PermutationMethod(n_resamples=math.inf))
    assert result.statistic == pytest.approx(ref.statistic)
    assert result.p_value == pytest.approx(ref.pvalue)


def test_mann_whitney_says_when_it_approximates():
    rng = np.random.default_rng(1)
    a, b = np.round(rng.normal(0, 1, 20)), np.round(rng.normal(0, 1, 20))
    result = mann_whitney(list(a), list(b))
    assert result.method == "mann-whitney (normal approximation)"
    assert result.p_value == pytest.approx(sps.mannwhitneyu(a, b, method="asymptotic").pvalue)


def test_t_quantile_and_two_sided_p_are_scipy_stats_t() -> None:
    """The intervals and Welch's p come from scipy.special (so a report does not import
    scipy.stats): the same values as scipy.stats.t, integer and Welch's fractional df."""
    dfs = [1, 2, 3, 4.5, 7.25, 29, 100.3, 1e4]
    for df in dfs:
        for q in (0.5, 0.9, 0.975, 0.995):
            assert t_quantile(q, df) == float(sps.t.ppf(q, df)), (q, df)
        for t in (-3.1, 0.0, 0.7, 2.2, 40.0):
            assert t_two_sided_p(t, df) == pytest.approx(float(2 * sps.t.sf(abs(t), df)), rel=1e-12, abs=1e-300)


def test_a_report_loads_no_scipy_stats() -> None:
    """scipy.stats costs ~1 s of CPU at import; `fslab run`, `report` and `compare` load it
    only for a Mann–Whitney test."""
    import subprocess
    import sys

    script = ("import sys, fslab.cli, fslab.runner, fslab.report.outputs, fslab.report.compare, "
              "fslab.analysis.fieller, fslab.report.sections.paper_judge, fslab.stopping\n"
              "print('scipy.stats' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
