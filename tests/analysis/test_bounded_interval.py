"""A share's interval stays inside 0-100%: where the Student-t interval of a percentage
would leave its bounds (seed-003-usb's ext2 sequential reads: '18.3 (0.983 to 340, log
scale) %'), the interval is taken on the logit scale (delta method) and the table says so."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special
from scipy import stats as sps

from fslab.analysis.stats import summarize
from fslab.report.labels import mean_pm
from fslab.report.size_table import size_table
from fslab.report.units import fmt

SPREAD = [3.0, 33.6]  # two runs' sequential share, %


def test_a_share_beyond_its_bounds_gets_the_logit_interval_scipy_agrees() -> None:
    plain = summarize(SPREAD)
    assert plain.log_scale and plain.ci[1] > 100  # the log scale alone leaves the bound
    s = summarize(SPREAD, upper=100.0)
    assert s.bounded_ci is not None and not s.log_scale and s.ci == s.bounded_ci
    x = np.asarray(SPREAD) / 100
    p = x.mean()
    low, high = special.expit(sps.t.interval(0.95, len(x) - 1, loc=special.logit(p),
                                             scale=x.std(ddof=1) / (math.sqrt(len(x)) * p * (1 - p))))
    assert s.ci == pytest.approx((100 * low, 100 * high), rel=1e-12)
    assert 0 < s.ci[0] < s.mean < s.ci[1] < 100
    assert mean_pm(s) == f"{fmt(s.mean)} ({fmt(100 * low)} to {fmt(100 * high)}, logit scale) (n=2)"


def test_a_share_inside_its_bounds_keeps_the_student_interval() -> None:
    s = summarize([40.0, 42.0, 41.0], upper=100.0)
    assert s.bounded_ci is None and not s.log_scale
    assert mean_pm(s).startswith("41.0 ± ")


def test_a_share_at_its_bound_has_no_interval_to_transform() -> None:
    s = summarize([100.0, 100.0, 100.0], upper=100.0)  # every request sequential
    assert s.bounded_ci is None and s.ci == (100.0, 100.0)


def test_the_trace_tables_sequential_share_stays_inside() -> None:
    runs = [{"trace_read_requests_count": 100.0, "trace_read_sequential_fraction": v / 100} for v in SPREAD]
    table = size_table("t", {"ext2": runs}, {"ext2": None})
    read = next(row for row in table.rows if row[1] == "read")
    assert read[table.columns.index("sequential [%]")].endswith("logit scale)")
