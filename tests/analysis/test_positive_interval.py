"""A positive quantity's interval stays positive: where the Student-t interval of positive
values would reach below zero (seed 003's latency: '9.77 (−44.8 to 64.3) ms'), the
interval is taken on the log scale (delta method) and the report says so."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from fslab.analysis.stats import log_scale_interval, summarize
from fslab.report.labels import mean_pm

# Three latencies with one outlier (ns): the Student-t interval reaches below zero.
SPREAD = [3.0e6, 3.3e6, 23.0e6]


def test_a_spread_out_positive_sample_gets_the_log_scale_interval_scipy_agrees() -> None:
    s = summarize(SPREAD)
    assert s.mean - s.ci_half_width < 0  # the Student interval: below zero
    assert s.log_scale and s.ci is not None
    # scipy's t interval on the log scale: centre log(mean), scale s / (sqrt(n) mean).
    x = np.asarray(SPREAD)
    low, high = np.exp(sps.t.interval(0.95, len(x) - 1, loc=math.log(x.mean()),
                                      scale=x.std(ddof=1) / (math.sqrt(len(x)) * x.mean())))
    assert s.ci == pytest.approx((low, high), rel=1e-12)
    assert 0 < s.ci[0] < s.mean < s.ci[1]
    assert s.ci[1] / s.mean == pytest.approx(s.mean / s.ci[0])  # symmetric on the log scale
    assert mean_pm(s, 1e6) == f"9.77 ({low / 1e6:.3g} to {high / 1e6:.3g}, log scale) (n=3)"


def test_a_tight_sample_keeps_the_student_interval() -> None:
    s = summarize([100.0, 102.0, 98.0])
    assert not s.log_scale
    half = sps.t.ppf(0.975, 2) * 2.0 / math.sqrt(3)
    assert s.ci == pytest.approx((100 - half, 100 + half))
    assert mean_pm(s) == f"100 ± {half:.3g} (n=3)"


def test_values_that_can_be_negative_keep_the_student_interval() -> None:
    assert not summarize([-1.0, 0.5, 4.0]).log_scale


def test_the_log_scale_interval_covers_a_skewed_mean_at_about_its_level() -> None:
    """Lognormal latencies (sigma 1, n = 5, 4,000 samples): the intervals fslab gives cover
    the true mean at least as often as Student's alone, never reach below zero."""
    rng = np.random.default_rng(7)
    true_mean = math.exp(0.5)
    covered_fslab = covered_student = 0
    for _ in range(4000):
        x = rng.lognormal(0.0, 1.0, 5)
        s = summarize(x)
        assert s.ci is not None and s.ci[0] > 0
        covered_fslab += s.ci[0] <= true_mean <= s.ci[1]
        covered_student += s.mean - s.ci_half_width <= true_mean <= s.mean + s.ci_half_width
    assert covered_fslab > covered_student  # measured: 83.9% against 81.7% (skewed, n = 5)


def test_the_interval_needs_a_positive_mean() -> None:
    with pytest.raises(ValueError):
        log_scale_interval(0.0, 1.0, 3)
