"""How a ratio stands against a paper's: the paper's direction, its ratio as the paper
says it, and the size judgement — a ratio within ``SIZE_TOLERANCE`` (2x) of the paper's,
either way, in the paper's direction, holds; otherwise how far off and which way. "More
than X" holds from X / 2 up, "less than X" up to 2X; a ratio of 1 with "more than" or "less
than" says only the direction, and has no size to judge.

Also the test of a ratio of two changes (a ``baseline_workload`` figure: A's aged over
empty against B's): Welch's approximate t on the logarithms, the difference of two
differences of log means with the Welch–Satterthwaite degrees of freedom over its four
samples (Satterthwaite 1946, the same rule as Welch's for two)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...analysis.stats import MIN_N_FOR_VERDICT, NoVerdict, t_two_sided_p
from ...paper import SIZE_TOLERANCE, PaperFigure
from ..units import fmt


def as_given(number: float) -> str:
    """A paper's number as the paper prints it (125.9, 1.4, 50), not rounded to fslab's digits."""
    return f"{number:,g}"


def paper_ratio_text(f: PaperFigure) -> str:
    assert f.ratio is not None
    if f.ratio == 1 and f.relation != "about":
        return "higher (> 1x)" if f.relation == "more than" else "lower (< 1x)"
    return f"{f.relation} {as_given(f.ratio)}x"


def paper_direction(f: PaperFigure) -> int:
    """+1: the paper has the numerator higher, -1: lower, 0: equal ("about 1x"). A ratio
    near 1 still says which is higher: a paper that calls a 1% gap a win is judged on it."""
    assert f.ratio is not None
    if f.relation == "more than" and f.ratio >= 1:
        return 1
    if f.relation == "less than" and f.ratio <= 1:
        return -1
    return 0 if f.ratio == 1 else (1 if f.ratio > 1 else -1)


def size_judgement(f: PaperFigure, ratio: float) -> tuple[bool | None, str]:
    """(within the tolerance?, the words): None when the paper gives no size (an ordering)."""
    assert f.ratio is not None
    paper = f.ratio
    if paper == 1 and f.relation != "about":
        return None, ""
    k = ratio / paper
    times = f"{fmt(k)}x the paper's"
    if f.relation == "more than":
        if k >= 1 / SIZE_TOLERANCE:
            return True, f"{times} 'more than {as_given(paper)}x': within {SIZE_TOLERANCE:g}x of it or above"
        return False, f"{times} 'more than {as_given(paper)}x': {fmt(1 / k)}x short of it"
    if f.relation == "less than":
        if k <= SIZE_TOLERANCE:
            return True, f"{times} 'less than {as_given(paper)}x': within {SIZE_TOLERANCE:g}x of it or below"
        return False, f"{times} 'less than {as_given(paper)}x': {fmt(k)}x above it"
    if 1 / SIZE_TOLERANCE <= k <= SIZE_TOLERANCE:
        return True, f"{times}: within {SIZE_TOLERANCE:g}x"
    if k > 1:
        return False, f"{times}: {fmt(k)}x larger a ratio than the paper's"
    return False, f"{times}: {fmt(1 / k)}x smaller a ratio than the paper's"


def unmeasured_verdict(f: PaperFigure, ratio: float, low: float | None = None, high: float | None = None) -> str:
    """A predicted (or otherwise untested) ratio against the paper's: direction and size.
    With the ratio's 95% interval (``low``, ``high``), a direction whose interval reaches
    across 1 is said to be unsettled, so a point estimate of 1.004x is not read as a way."""
    return _point_verdict(f, ratio) + _unsettled(f, low, high)


def _unsettled(f: PaperFigure, low: float | None, high: float | None) -> str:
    if paper_direction(f) == 0 or low is None or high is None or not low <= 1 <= high:
        return ""
    return "; its 95% interval includes 1: the direction is not settled at this n"


def _point_verdict(f: PaperFigure, ratio: float) -> str:
    paper = paper_direction(f)
    way = 1 if ratio > 1 else -1 if ratio < 1 else 0
    ok, size = size_judgement(f, ratio)
    if paper != 0 and way != paper:
        return "not the paper's way"
    if ok is False:
        return f"the paper's way, not its size ({size})"
    if paper == 0:
        return f"about equal as the paper's ({size})" if ok else f"not about equal ({size})"
    return "the paper's way" + (f" ({size})" if size else "")


def change_test(num: Sequence[float], num_base: Sequence[float], den: Sequence[float],
                den_base: Sequence[float]) -> float:
    """Two-sided p of ln(num/num_base) = ln(den/den_base) on the log means (module
    docstring). Raises NoVerdict with fewer than MIN_N_FOR_VERDICT values in a sample, a
    value of zero or below, or no spread at all."""
    samples = [np.log(np.asarray(s, float)) for s in (num, num_base, den, den_base)
               if min(s, default=0) > 0]
    if len(samples) < 4:
        raise NoVerdict("a value of zero or below: no logarithm")
    if min(s.size for s in samples) < MIN_N_FOR_VERDICT:
        raise NoVerdict(f"fewer than {MIN_N_FOR_VERDICT} runs in a sample")
    a, b, c, d = (float(s.mean()) for s in samples)
    terms = [float(s.var(ddof=1)) / s.size for s in samples]
    se2 = sum(terms)
    if se2 == 0:
        raise NoVerdict("no spread in any of the four samples")
    df = se2 ** 2 / sum(t * t / (s.size - 1) for t, s in zip(terms, samples))
    t = ((a - b) - (c - d)) / math.sqrt(se2)
    return t_two_sided_p(t, df)
