"""Group-sequential testing: looking at a comparison after every pass of a study and
stopping as soon as it is answered, with the false-positive rate still at the nominal α.

Testing again after each new run at the fixed level α inflates the error (with 18 looks
at α = 0.05, a naive rule calls about one in five null comparisons significant). The
method used here is the **alpha-spending function** of Lan & DeMets (1983): a function
α*(t) rising from 0 to α over the information fraction t decides how much of α may be
spent by each look, whatever the number and timing of the looks. The two-sided boundary
c_k of look k is found so that, for the standardised statistic of a Brownian motion
observed at the information times t_1 < ... < t_k,

    P(|Z_1| < c_1, ..., |Z_{k-1}| < c_{k-1}, |Z_k| >= c_k) = α*(t_k) - α*(t_{k-1}),

computed by the recursive numerical integration of Armitage, McPherson & Rowe (1969), as
set out by Jennison & Turnbull (2000, *Group Sequential Methods*, ch. 19). The variance
is unknown and the groups small, so each boundary is used as a nominal significance
level: look k rejects when Welch's two-sided p is below 2(1 - Φ(c_k)) (Jennison &
Turnbull 2000, §3.8 recommend this for t-statistics). The simulation in
tests/analysis/test_sequential.py measures the resulting false-positive rate.

Spending functions (Lan & DeMets 1983):
- ``pocock``: α*(t) = α ln(1 + (e - 1) t), Pocock-like; spends early, so a large
  difference is answered at the first look (the default: fslab's aim is time to answer);
- ``obrien-fleming``: α*(t) = 4 - 4Φ(z_{1-α/4} / √t) (α/2 per side, each spent by Lan &
  DeMets's O'Brien–Fleming-like function); spends almost nothing early and keeps nearly
  all of α for the last look.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from scipy import optimize, special

SPENDING_FUNCTIONS = ("pocock", "obrien-fleming")
# Grid points per unit of z in the numerical integration (Jennison & Turnbull use about 6
# per standard deviation with Simpson's rule; this is finer, for boundaries to 1e-4).
_GRID_PER_UNIT = 24
_Z_LIMIT = 8.0  # beyond this the normal density is below 1e-14: nothing left to integrate


def spent(alpha: float, t: float, function: str = "pocock") -> float:
    """α*(t): the share of ``alpha`` a spending function allows by information fraction t
    (0 <= t <= 1; α*(0) = 0, α*(1) = alpha)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1 (given {alpha})")
    t = min(max(t, 0.0), 1.0)
    if t == 0:
        return 0.0
    if function == "pocock":
        return alpha * math.log(1 + (math.e - 1) * t)
    if function == "obrien-fleming":  # alpha/2 per side, each spent as Lan & DeMets's one-sided form
        z = float(special.ndtri(1 - alpha / 4))
        return float(4 - 4 * special.ndtr(z / math.sqrt(t)))
    raise ValueError(f"unknown spending function {function!r}; known: {', '.join(SPENDING_FUNCTIONS)}")


def _normal_pdf(x: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def _grid(limit: float) -> tuple[np.ndarray, np.ndarray]:
    """Points and Simpson weights on [-limit, limit]."""
    count = max(int(2 * limit * _GRID_PER_UNIT) // 2 * 2 + 1, 3)  # odd, for Simpson
    points = np.linspace(-limit, limit, count)
    weights = np.ones(count)
    weights[1:-1:2], weights[2:-1:2] = 4.0, 2.0
    return points, weights * (points[1] - points[0]) / 3


def _exit_probability(c: float, points: np.ndarray, mass: np.ndarray, previous_t: float, t: float) -> float:
    """P(|Z_t| >= c and Z stayed inside before), the earlier continuation region given as
    the sub-density ``mass`` (density x quadrature weight) of Z at ``previous_t`` on
    ``points``. Given Z_prev = u, Z_t is normal with mean u sqrt(t_prev / t) and sd
    sqrt((t - t_prev) / t) (the increments of a Brownian motion are independent)."""
    if points.size == 0:
        return float(2 * special.ndtr(-c))
    mean = points * math.sqrt(previous_t / t)
    sd = math.sqrt((t - previous_t) / t)
    return float(np.sum(mass * (special.ndtr((-c - mean) / sd) + special.ndtr((mean - c) / sd))))


def _excess(c: float, points: np.ndarray, mass: np.ndarray, previous_t: float, t: float, target: float) -> float:
    return _exit_probability(c, points, mass, previous_t, t) - target


@lru_cache(maxsize=4096)
def boundaries(alpha: float, fractions: tuple[float, ...], function: str = "pocock") -> tuple[float, ...]:
    """Two-sided z boundaries c_1..c_k for looks at the information fractions ``fractions``
    (increasing, each in (0, 1]; a look at 1 spends what is left of α). A look that may
    spend nothing gets an infinite boundary."""
    if not fractions or fractions[0] <= 0 or any(b <= a for a, b in zip(fractions, fractions[1:])):
        raise ValueError(f"information fractions must increase from above 0: {fractions}")
    out: list[float] = []
    # The sub-density of Z at the previous look on its continuation region, on a grid.
    points = mass = np.empty(0)
    previous_t = 0.0
    for t in fractions:
        target = spent(alpha, t, function) - spent(alpha, previous_t, function)
        if target <= 1e-15:
            c = math.inf
        else:
            c = float(optimize.brentq(_excess, 1e-6, 40.0, args=(points, mass, previous_t, t, target), xtol=1e-10))
        out.append(c)
        # The density of Z_t on (-c, c), for the next look.
        new_points, new_weights = _grid(min(c, _Z_LIMIT))
        if points.size == 0:
            density = _normal_pdf(new_points)
        else:
            mean = points * math.sqrt(previous_t / t)
            sd = math.sqrt((t - previous_t) / t)
            density = (_normal_pdf((new_points[:, None] - mean[None, :]) / sd) / sd) @ mass
        points, mass = new_points, density * new_weights
        previous_t = t
    return tuple(out)


def nominal_levels(alpha: float, fractions: Sequence[float], function: str = "pocock") -> list[float]:
    """The two-sided nominal significance level of each look, 2(1 - Φ(c_k))."""
    return [float(2 * special.ndtr(-c)) if math.isfinite(c) else 0.0
            for c in boundaries(alpha, tuple(round(f, 12) for f in fractions), function)]


def information_fraction(n_a: int, n_b: int, max_n: int) -> float:
    """Information of a two-sample comparison of means, relative to its maximum: with the
    (unknown, common) variance σ², the variance of the difference of means is
    σ²(1/n_a + 1/n_b), so information is 1/(1/n_a + 1/n_b) and at most max_n/2."""
    if min(n_a, n_b) <= 0 or max_n <= 0:
        raise ValueError("information needs at least one value per group and max_n > 0")
    return min(1.0, (1 / (1 / n_a + 1 / n_b)) / (max_n / 2))


def look_levels(alpha: float, looks: Sequence[tuple[int, int]], max_n: int,
                function: str = "pocock") -> list[tuple[float, float]]:
    """(information fraction, nominal level) of each look at a comparison, given its
    (n_a, n_b) per look. Raises ValueError when a look adds no information."""
    fractions = [information_fraction(n_a, n_b, max_n) for n_a, n_b in looks]
    for before, after in zip(fractions, fractions[1:]):
        if after <= before:
            raise ValueError(f"a look at information fraction {after:.3f} adds nothing to {before:.3f}")
    return list(zip(fractions, nominal_levels(alpha, fractions, function)))
