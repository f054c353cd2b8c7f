"""Contrasts: how much one axis value changes a metric relative to another, per file
system and per case, as a ratio of means with a 95% interval — the ratios the seed
papers read off their figures ("cached reads were 40x faster than direct ones").

Interval method: the delta method on the log scale. For sample means m1, m2 with
variances s1², s2² over n1, n2 runs, ln(m1/m2) has variance ≈ s1²/(n1·m1²) + s2²/(n2·m2²);
degrees of freedom by Welch–Satterthwaite on those two terms; the interval is
exp(ln(m1/m2) ± t·se). It is asymmetric around the ratio, as a ratio's interval should be.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..stored import STATUS_OK, StoredCell, StoredRun
from ..units import assignments_text, counted, value_text
from .stats import t_quantile

# Python's spelling of a boolean axis value, as labels showed it before (units.value_text)
_PYTHON_BOOLEANS = {"True": "true", "False": "false"}


@dataclass(frozen=True)
class RatioCI:
    ratio: float
    low: float | None
    high: float | None
    n_numerator: int
    n_denominator: int


def ratio_ci(numerator: Sequence[float], denominator: Sequence[float], confidence: float = 0.95) -> RatioCI:
    """Ratio of means with its delta-method interval (None bounds when n < 2 or m <= 0)."""
    x, y = np.asarray(numerator, float), np.asarray(denominator, float)
    if x.size == 0 or y.size == 0:
        raise ValueError("a ratio needs values on both sides")
    mx, my = float(x.mean()), float(y.mean())
    if my == 0:
        raise ValueError("the denominator's mean is zero")
    ratio = mx / my
    if x.size < 2 or y.size < 2 or mx <= 0 or my <= 0:
        return RatioCI(ratio, None, None, int(x.size), int(y.size))
    a = x.var(ddof=1) / (x.size * mx * mx)
    b = y.var(ddof=1) / (y.size * my * my)
    se = math.sqrt(a + b)
    if se == 0:
        return RatioCI(ratio, ratio, ratio, int(x.size), int(y.size))
    df = (a + b) ** 2 / (a * a / (x.size - 1) + b * b / (y.size - 1))
    t = t_quantile(0.5 + confidence / 2, df)
    return RatioCI(ratio, ratio * math.exp(-t * se), ratio * math.exp(t * se), int(x.size), int(y.size))


@dataclass(frozen=True)
class ContrastRow:
    workload: str
    case: str  # the other axes' values
    filesystem: str
    result: RatioCI


def parse_contrast(text: str) -> tuple[str, str, str]:
    """'direct=0/1' -> ('direct', '0', '1'): numerator value, then denominator value, as
    ``units.value_text`` writes them (a boolean axis: 'sync=true/false'; Python's 'True'
    and 'False', which labels showed before, read the same)."""
    axis, sep, values = text.partition("=")
    a, slash, b = values.partition("/")
    if not sep or not slash or not axis or not a or not b:
        raise ValueError(f"{text!r}: write AXIS=A/B, e.g. direct=true/false or layout=many-small/few-large")
    a, b = _PYTHON_BOOLEANS.get(a, a), _PYTHON_BOOLEANS.get(b, b)
    if a == b:
        raise ValueError(f"{text!r}: A and B are the same value; a contrast compares two values of {axis}")
    return axis, a, b


def axis_values_text(cells: Sequence[StoredCell], axis: str) -> str:
    """'direct takes true, false' or 'rw is not an axis (axes: bs, direct)': what a
    contrast of ``axis`` can name in these cells."""
    values = list(dict.fromkeys(value_text(c["axes"][axis]) for c in cells if axis in c["axes"]))
    if values:
        return f"{axis} takes {', '.join(values)}"
    axes = list(dict.fromkeys(k for c in cells for k in c["axes"]))
    return f"{axis} is not an axis ({'axes: ' + ', '.join(axes) if axes else 'this study has no axes'})"


def contrasts(runs: Sequence[StoredRun], cells: Sequence[StoredCell], axis: str,
              numerator: str, denominator: str, metric: str | None = None,
              left_out: list[str] | None = None) -> list[ContrastRow]:
    """Every pair of cells that differ only in ``axis`` (numerator vs denominator value).
    A pair of which a side has no run with a number is left out, and said in ``left_out``
    ('ext4 w [bs=4096]: direct=true has no run with a number (3 runs failed)'; 'not run yet'
    where a side has no stored run)."""
    values: dict[str, list[float]] = {}
    failed: dict[str, int] = {}
    metric_of: dict[str, str] = {}
    for cell in cells:
        metric_of[cell["id"]] = metric or cell["primary_metric"]
    for run in runs:
        cell = run["cell"]
        if run["status"] != STATUS_OK:
            failed[cell["id"]] = failed.get(cell["id"], 0) + 1
            continue
        m = run["metrics"].get(metric_of.get(cell["id"], ""))
        if m is not None and m["value"] is not None:
            values.setdefault(cell["id"], []).append(float(m["value"]))
    index: dict[tuple[str, str, str, str], str] = {}
    for cell in cells:
        if axis not in cell["axes"]:
            continue
        rest = assignments_text((k, v) for k, v in cell["axes"].items() if k != axis)
        index[(cell["filesystem"], cell["workload"], rest, value_text(cell["axes"][axis]))] = cell["id"]
    rows = []
    for (fs, workload, rest, value), cell_id in index.items():
        if value != numerator:
            continue
        other = index.get((fs, workload, rest, denominator))
        if other is None:
            continue
        empty = [(v, c) for v, c in ((numerator, cell_id), (denominator, other)) if not values.get(c)]
        if empty:
            if left_out is not None:
                left_out.append(f"{fs} {workload}{f' [{rest}]' if rest else ''}: " + ", ".join(
                    f"{axis}={v} " + (f"has no run with a number ({counted(failed[c], 'run')} failed)"
                                      if failed.get(c) else "not run yet") for v, c in empty))
            continue
        if metric_of[cell_id] != metric_of[other]:
            raise ValueError(
                f"{axis}={numerator} is reported in {metric_of[cell_id]} but {axis}={denominator} "
                f"in {metric_of[other]}: name one metric with --metric (e.g. --metric iops)")
        rows.append(ContrastRow(workload, rest or "all", fs, ratio_ci(values[cell_id], values[other])))
    return rows
