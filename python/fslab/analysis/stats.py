"""Statistics across repetitions.

Methods (each tested against published values in tests/test_stats.py):
- Confidence interval of a mean: Student's t interval, mean ± t(0.975, n-1) · s/√n. For
  a sample of positive values whose Student interval would reach below zero (few runs,
  much spread: a latency cannot be negative), the interval is taken on the log scale
  instead: log x̄ ± t(0.975, n-1) · s/(√n · x̄), by the delta method (the standard error of
  log x̄ is about that of x̄ over x̄; Casella & Berger 2002, §5.5.4), then exponentiated,
  so it stays above zero and is asymmetric (``Summary.log_scale``). A share bounded by
  ``upper`` (a percentage: 0 to 100) whose Student interval would leave 0..upper gets it
  on the logit scale the same way: logit p̄ ± t · s/(√n · upper · p̄(1 − p̄)), p̄ = x̄/upper,
  mapped back, so it stays inside the bounds (``Summary.bounded_ci``).
- Difference of two means: Welch's unequal-variances t-test (Welch 1947), with the
  Welch–Satterthwaite degrees of freedom; sample sizes may differ.
- Non-parametric alternative: Mann–Whitney U, two-sided (Mann & Whitney 1947). Exact
  null distribution when there are no ties and both samples are small enough for it;
  with ties, an exact permutation test over all splits when there are few enough, else
  the normal approximation with tie correction. The result names the method used.
- Honest refusals: a verdict needs at least MIN_N_FOR_VERDICT values per group (the
  caller may lower it, not below 2) and some spread. With zero pooled variance Welch's t
  is 0/0 or x/0 — usually rounding or a too-coarse metric, not certainty — so it raises
  NoVerdict instead of answering p = 0 or p = 1. compare_groups records the reason.
- Many comparisons: Holm's step-down correction (Holm 1979), which controls the
  family-wise error rate without assuming independence.
- Effect size: ratio of means and Hedges' g (Cohen's d with small-sample correction).
Percentiles everywhere in fslab are on the 0–100 scale.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

CONFIDENCE = 0.95
# Below 3 runs per group, a t-test's variance estimate rests on one degree of freedom per
# group; with the integer-valued metrics fslab stores it gave ~12% false positives at n = 2.
MIN_N_FOR_VERDICT = 3
# Mann–Whitney: exact permutation over all splits while C(n1+n2, n1) stays this small.
_MAX_PERMUTATION_SPLITS = 200_000


def t_quantile(q: float, df: float) -> float:
    """Student's t quantile: what ``scipy.stats.t.ppf(q, df)`` computes (its ``_ppf`` is
    ``special.stdtrit``), without importing ``scipy.stats``, which costs every ``fslab
    report``, ``compare`` and ``run`` ~1 s of CPU at start."""
    return float(special.stdtrit(df, q))


def t_two_sided_p(t: float, df: float) -> float:
    """Two-sided p of Student's t: ``2 * scipy.stats.t.sf(|t|, df)``, by ``special.stdtr``
    (Student's t CDF, which called directly is also ~20x faster than ``t.sf``)."""
    return 2 * float(special.stdtr(df, -abs(t)))


class NoVerdict(ValueError):
    """A significance test cannot give an honest answer on these samples (the message
    says why); callers report "no verdict", never "significant" or "not"."""


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    sd: float | None  # sample standard deviation (n-1); None when n < 2
    ci_half_width: float | None  # half-width of the 95% interval; None when n < 2
    median: float
    minimum: float
    maximum: float
    # The log-scale interval, set only where the Student interval of positive values would
    # reach below zero: then it is the interval (``ci``), and reports say "log scale".
    log_ci: tuple[float, float] | None = None
    # The logit-scale interval of a bounded share, set only where the Student interval
    # would leave its bounds: then it is the interval, and reports say "logit scale".
    bounded_ci: tuple[float, float] | None = None

    @property
    def log_scale(self) -> bool:
        return self.log_ci is not None

    @property
    def ci(self) -> tuple[float, float] | None:
        """The 95% interval of the mean: Student's t, or on the log scale (``log_scale``),
        or for a bounded share on the logit scale (``bounded_ci``)."""
        if self.bounded_ci is not None:
            return self.bounded_ci
        if self.log_ci is not None:
            return self.log_ci
        if self.ci_half_width is None:
            return None
        return (self.mean - self.ci_half_width, self.mean + self.ci_half_width)

    @property
    def cv(self) -> float | None:
        """Coefficient of variation, sd / mean (a fraction, not a percentage)."""
        if self.sd is None or self.mean == 0:
            return None
        return self.sd / abs(self.mean)


def summarize(values: Sequence[float], confidence: float = CONFIDENCE, *, upper: float | None = None) -> Summary:
    """Mean, sd and Student-t interval; ``upper``: the values are a share from 0 to upper
    (100 for a percentage), whose interval must stay inside. Raises ValueError on an
    empty sample."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        raise ValueError("cannot summarise an empty sample")
    n = int(data.size)
    mean = float(data.mean())
    if n < 2:
        return Summary(n, mean, None, None, mean, mean, mean)
    sd = float(data.std(ddof=1))
    t = t_quantile(0.5 + confidence / 2, n - 1)
    half_width = t * sd / math.sqrt(n)
    log_ci = bounded_ci = None
    crosses = mean - half_width < 0 or (upper is not None and mean + half_width > upper)
    if upper is not None and crosses and 0 < mean < upper and 0 <= float(data.min()) <= float(data.max()) <= upper:
        bounded_ci = logit_scale_interval(mean, sd, n, upper, confidence)
    elif float(data.min()) > 0 and mean - half_width < 0:  # a positive quantity: keep its interval above 0
        log_ci = log_scale_interval(mean, sd, n, confidence)
    return Summary(n, mean, sd, half_width, float(np.median(data)), float(data.min()), float(data.max()), log_ci,
                   bounded_ci)


def logit_scale_interval(mean: float, sd: float, n: int, upper: float,
                         confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The interval of a share's mean (0 < mean < upper) on the logit scale, by the delta
    method, mapped back: always inside (0, upper). Raises ValueError outside that."""
    if not 0 < mean < upper or n < 2:
        raise ValueError(f"a logit-scale interval needs 0 < mean < {upper} and n >= 2 (mean {mean}, n {n})")
    p = mean / upper
    t = t_quantile(0.5 + confidence / 2, n - 1)
    half = t * sd / (math.sqrt(n) * upper * p * (1 - p))
    centre = math.log(p / (1 - p))
    return (upper * float(special.expit(centre - half)), upper * float(special.expit(centre + half)))


def log_scale_interval(mean: float, sd: float, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The interval of a positive mean on the log scale: exp(log x̄ ± t · s/(√n · x̄)) (delta
    method). Always above zero; the ratio high/mean equals mean/low. Raises ValueError for a
    mean that is not positive or n < 2."""
    if mean <= 0 or n < 2:
        raise ValueError(f"a log-scale interval needs a positive mean and n >= 2 (mean {mean}, n {n})")
    t = t_quantile(0.5 + confidence / 2, n - 1)
    factor = math.exp(t * sd / (math.sqrt(n) * mean))
    return (mean / factor, mean * factor)


@dataclass(frozen=True)
class TestResult:
    statistic: float
    p_value: float
    df: float | None
    method: str


def welch_t(a: Sequence[float], b: Sequence[float]) -> TestResult:
    """Welch's t-test (two-sided); t = (mean(a) - mean(b)) / se, so t < 0 when a's mean is
    lower. Needs at least 2 values per sample (ValueError) and some spread in at least one
    (NoVerdict: with zero pooled variance the statistic is undefined)."""
    x, y = np.asarray(a, float), np.asarray(b, float)
    if x.size < 2 or y.size < 2:
        raise ValueError("Welch's t-test needs at least 2 values per sample")
    return welch_t_from_moments(float(x.mean()), float(x.var(ddof=1)), int(x.size),
                                float(y.mean()), float(y.var(ddof=1)), int(y.size))


def welch_t_from_moments(mean_a: float, var_a: float, n_a: int, mean_b: float, var_b: float,
                         n_b: int) -> TestResult:
    """Welch's t-test from each sample's mean, variance (n-1) and size: the one
    computation ``welch_t`` makes, for callers that keep running moments."""
    if n_a < 2 or n_b < 2:
        raise ValueError("Welch's t-test needs at least 2 values per sample")
    vx, vy = var_a / n_a, var_b / n_b
    if vx + vy == 0:
        raise NoVerdict("no spread in either group (zero variance): Welch's t is undefined")
    t = (mean_a - mean_b) / math.sqrt(vx + vy)
    df = (vx + vy) ** 2 / (vx**2 / (n_a - 1) + vy**2 / (n_b - 1))
    return TestResult(float(t), t_two_sided_p(t, df), float(df), "welch-t")


def mann_whitney(a: Sequence[float], b: Sequence[float]) -> TestResult:
    """Two-sided Mann–Whitney U test; the statistic is U of ``a``. The p-value is exact
    (scipy's exact null distribution, any n) when there are no ties; with ties it is an
    exact permutation test over all C(n1+n2, n1) splits of the mid-ranks when there are at
    most 200,000 of them; otherwise the normal approximation with tie and continuity
    correction. Two-sided p is twice the smaller tail, capped at 1. ``method`` says which:
    "mann-whitney (exact)", "(permutation, exact)" or "(normal approximation)"."""
    from scipy import stats as sps  # only here: the rest of fslab needs no scipy.stats

    x, y = np.asarray(a, float), np.asarray(b, float)
    if x.size < 1 or y.size < 1:
        raise ValueError("Mann–Whitney needs at least 1 value per sample")
    pooled = np.concatenate([x, y])
    ties = np.unique(pooled).size < pooled.size
    if not ties:
        result = sps.mannwhitneyu(x, y, alternative="two-sided", method="exact")
        return TestResult(float(result.statistic), float(result.pvalue), None, "mann-whitney (exact)")
    if math.comb(x.size + y.size, x.size) <= _MAX_PERMUTATION_SPLITS:
        # Every split of the pooled values, mid-ranks as they are; two-sided p is twice the
        # smaller one-sided tail (capped at 1), as in scipy's exact method.
        result = sps.mannwhitneyu(x, y, alternative="two-sided",
                                  method=sps.PermutationMethod(n_resamples=math.inf))
        return TestResult(float(result.statistic), float(result.pvalue), None,
                          "mann-whitney (permutation, exact)")
    result = sps.mannwhitneyu(x, y, alternative="two-sided", method="asymptotic")
    return TestResult(float(result.statistic), float(result.pvalue), None,
                      "mann-whitney (normal approximation)")


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the input order (monotone, capped at 1)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def hedges_g(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Standardised mean difference (a - b) with the small-sample correction J."""
    x, y = np.asarray(a, float), np.asarray(b, float)
    if x.size < 2 or y.size < 2:
        return None
    return _hedges_g_from_moments(_Moments.of(x), _Moments.of(y))


@dataclass(frozen=True)
class _Moments:
    """A sample's size, mean and variance (n-1), each taken once by numpy, so that a row's
    comparisons reuse them (the same floats as computing them again)."""

    n: int
    mean: float
    var: float | None  # None when n < 2

    @classmethod
    def of(cls, data: np.ndarray) -> _Moments:
        n = int(data.size)
        return cls(n, float(data.mean()) if n else 0.0, float(data.var(ddof=1)) if n >= 2 else None)


def _hedges_g_from_moments(x: _Moments, y: _Moments) -> float | None:
    """``hedges_g`` from moments taken once (``compare_groups`` reuses the reference's)."""
    if x.var is None or y.var is None:
        return None
    pooled = math.sqrt(((x.n - 1) * x.var + (y.n - 1) * y.var) / (x.n + y.n - 2))
    if pooled == 0:
        return None
    d = (x.mean - y.mean) / pooled
    return float(d * (1 - 3 / (4 * (x.n + y.n) - 9)))


@dataclass(frozen=True)
class Comparison:
    a: str
    b: str
    ratio: float | None  # mean(a) / mean(b)
    p_value: float | None  # None: no verdict (see `untested`)
    p_adjusted: float | None
    significant: bool
    effect_size: float | None
    method: str
    untested: str | None = None  # why there is no verdict, in words


def compare_groups(groups: Mapping[str, Sequence[float]], reference: str,
                   alpha: float = 1 - CONFIDENCE, min_n: int = MIN_N_FOR_VERDICT) -> list[Comparison]:
    """Compare every group with ``reference`` (Welch's t, Holm across the comparisons that
    could be tested). A group with fewer than ``min_n`` values (on either side), or with no
    spread on both sides, gets a Comparison with no verdict and the reason in ``untested``;
    empty groups are left out. ``min_n`` may be lowered to 2 by a caller who asks."""
    if min_n < 2:
        raise ValueError("a t-test needs at least 2 values per group (min_n >= 2)")
    names = [g for g in groups if g != reference and len(groups[g]) >= 1]
    moments = {g: _Moments.of(np.asarray(groups[g], float)) for g in [reference, *names]}
    base = moments[reference]
    tested: dict[str, TestResult] = {}
    reasons: dict[str, str] = {}
    for g in names:
        m = moments[g]
        if min(m.n, base.n) < min_n:
            reasons[g] = f"fewer than {min_n} runs per group (n = {m.n} vs {base.n})"
            continue
        assert m.var is not None and base.var is not None  # n >= min_n >= 2
        try:
            tested[g] = welch_t_from_moments(m.mean, m.var, m.n, base.mean, base.var, base.n)
        except NoVerdict as exc:
            reasons[g] = str(exc)
    adjusted = dict(zip(tested, holm([t.p_value for t in tested.values()])))
    out = []
    for g in names:
        ratio = moments[g].mean / base.mean if base.mean else None
        if g in reasons:
            out.append(Comparison(g, reference, ratio, None, None, False, None, "welch-t, holm",
                                  untested=reasons[g]))
            continue
        p = adjusted[g]
        out.append(Comparison(g, reference, ratio, tested[g].p_value, p, p < alpha,
                              _hedges_g_from_moments(moments[g], base), "welch-t, holm"))
    return out
