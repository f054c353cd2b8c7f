"""Repeat until answered: which cells of a ``repetitions = "auto"`` study still need runs.

A study with automatic repetitions runs in passes (every cell still repeating once, in a
shuffled order). After each pass, from pass ``min_n`` on, a cell stops repeating on

- **verdict**: every comparison it is part of is significant by the group-sequential
  test (fslab.analysis.sequential: Welch's t against the level Lan–DeMets alpha spending
  allows at that look's information fraction);
- **precision**: the 95% interval of its primary metric is as narrow as asked (half-width
  at most ``precision`` x |mean|) and every comparison it is in is answered: significant,
  or both sides that precise with an observed difference below ``precision``;
- **max**: it has had ``max_n`` passes; or **failing**: none of ``min_n`` runs gave a number.

Compared are the file systems of one workload case run by one backend and kernel (every
pair, α split evenly over the pairs of the case: Bonferroni), and, for each ``contrast``
of the study (``direct=0/1``), the two cells of a file system and case that differ only
in that axis. A comparison is looked at after every pass that gave either side a new
run, once both have at least MIN_N_FOR_VERDICT runs. Stopping never spends α (a
comparison that ends without a verdict just has no more looks), so the false-positive
rate is at most that of the same looks run to the maximum: tests/analysis/
test_sequential.py measures it.

``decide`` is a pure function of the stored values: the runner calls it after each pass
to pick the next pass's cells, a resumed study calls it again and gets the same answer,
and the report reads what it decided (stored in the study's facts, ``AutoFacts``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from .stopping_rule import StoppingRule
from .stored import AutoFacts, AutoLookFacts, AutoPairFacts
from .units import value_text

if TYPE_CHECKING:
    from .jobdata.model import Cell

Reason = Literal["precision", "verdict", "max", "failing"]
@dataclass(frozen=True)
class CellInfo:
    """What the rule needs to know of a cell: which comparisons it is in."""

    id: str
    column: str  # the file system's column (backend and kernel included)
    compared_set: str  # cells with the same compared_set are compared pairwise
    axes: Mapping[str, Any] = field(default_factory=dict)
    filesystem: str = ""
    workload: str = ""


@dataclass
class CellState:
    id: str
    n: int = 0  # successful runs with a number
    runs: int = 0  # runs made (failed ones included)
    stopped_after_pass: int | None = None  # 0-based pass after which it stopped
    reason: Reason | None = None
    relative_half_width: float | None = None  # of the 95% interval, / |mean|

    @property
    def stopped(self) -> bool:
        return self.reason is not None

    def text(self, rule: StoppingRule) -> str:
        """Why the cell stopped (or that it goes on), for reports: 'precision reached at
        n = 6 (±4.1%)', 'verdict at n = 4', 'max 20 reached, interval ±12%'."""
        width = "" if self.relative_half_width is None else f"±{self.relative_half_width:.1%}"
        if self.reason == "precision":
            return f"precision reached at n = {self.n} ({width} ≤ ±{rule.precision:.0%})"
        if self.reason == "verdict":
            return f"verdict at n = {self.n}" + (f" (interval {width})" if width else "")
        if self.reason == "max":
            return f"max {rule.max_n} reached, interval {width or 'not known'}"
        if self.reason == "failing":
            return f"stopped: none of its {self.runs} runs gave a number"
        return f"repeating (n = {self.n}" + (f", interval {width})" if width else ")")


@dataclass(frozen=True)
class LookRecord:
    n_a: int
    n_b: int
    fraction: float
    p_value: float | None
    level: float
    significant: bool


@dataclass
class PairState:
    a: str
    b: str
    alpha: float  # this pair's share of the family's α
    kind: Literal["filesystems", "contrast"]
    looks: list[LookRecord] = field(default_factory=list)
    significant: bool = False
    final: bool = False  # no more looks: significant, answered without a verdict, or a side stopped

    def text(self) -> str:
        if not self.looks:
            return "no verdict: fewer than 3 runs on a side"
        last = self.looks[-1]
        p = "no test (no spread)" if last.p_value is None else f"p = {last.p_value:.2g}"
        state = "significant" if self.significant else ("no verdict" if self.final else "open")
        return (f"{state} at n = {last.n_a}/{last.n_b}: {p} vs level {last.level:.2g} "
                f"(look {len(self.looks)})")


@dataclass
class Decisions:
    rule: StoppingRule
    passes_done: int
    cells: dict[str, CellState]
    pairs: list[PairState]

    def repeating(self) -> list[str]:
        """Cells that need a run in the next pass (none when the study is done)."""
        if self.passes_done >= self.rule.max_n:
            return []
        return [c.id for c in self.cells.values() if not c.stopped]

    def to_facts(self) -> AutoFacts:
        return {
            "rule": self.rule.to_json(),
            "passes_done": self.passes_done,
            "cells": {c.id: {"n": c.n, "runs": c.runs, "reason": c.reason, "stopped_after_pass": c.stopped_after_pass,
                             "relative_half_width": c.relative_half_width, "text": c.text(self.rule)}
                      for c in self.cells.values()},
            "pairs": [{"a": p.a, "b": p.b, "alpha": p.alpha, "kind": p.kind, "significant": p.significant,
                       "final": p.final, "looks": [_look_facts(look) for look in p.looks], "text": p.text()}
                      for p in self.pairs],
        }


def cell_infos(cells: Sequence[Cell]) -> list[CellInfo]:
    """The rule's view of a plan's cells: the file systems of one workload case are
    compared when one backend and kernel ran them (never a guest against the host)."""
    out = []
    for cell in cells:
        column = cell.filesystem if cell.backend == "host" else f"{cell.filesystem} (guest {cell.kernel or ''})"
        compared = f"{cell.label}\x00{cell.backend}\x00{cell.kernel or ''}"
        out.append(CellInfo(cell.id, column, compared, dict(cell.axes), cell.filesystem, cell.workload))
    return out


def _look_facts(look: LookRecord) -> AutoLookFacts:
    return {"n_a": look.n_a, "n_b": look.n_b, "fraction": look.fraction, "p_value": look.p_value,
            "level": look.level, "significant": look.significant}


def _contrast_pairs(cells: Sequence[CellInfo], contrast: str) -> list[tuple[str, str]]:
    from .analysis.contrasts import parse_contrast

    axis, a, b = parse_contrast(contrast)
    index: dict[tuple[str, str, str, str], str] = {}
    for cell in cells:
        if axis in cell.axes:
            rest = repr(sorted((k, repr(v)) for k, v in cell.axes.items() if k != axis))
            index[(cell.column, cell.workload, rest, value_text(cell.axes[axis]))] = cell.id
    return [(cell_id, index[(col, wl, rest, b)]) for (col, wl, rest, value), cell_id in index.items()
            if value == a and (col, wl, rest, b) in index]


def make_pairs(cells: Sequence[CellInfo], rule: StoppingRule) -> list[PairState]:
    """Every comparison the rule tests: each pair of one compared set (α / pairs in the
    set), then each contrast's pairs (α each: a contrast is a question of its own)."""
    sets: dict[str, list[str]] = {}
    for cell in cells:
        sets.setdefault(cell.compared_set, []).append(cell.id)
    pairs: list[PairState] = []
    for members in sets.values():
        count = len(members) * (len(members) - 1) // 2
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                pairs.append(PairState(a, b, rule.alpha / count, "filesystems"))
    for contrast in rule.contrasts:
        pairs += [PairState(a, b, rule.alpha, "contrast") for a, b in _contrast_pairs(cells, contrast)]
    return pairs


@lru_cache(maxsize=1024)
def _t_quantile(df: int) -> float:
    from .analysis.stats import t_quantile  # numpy and scipy.special only when a rule is judged

    return t_quantile(0.975, df)


class _Moments:
    """A sample's size, mean and sum of squared deviations, kept as values come
    (Welford's update: stable where the spread is tiny next to the mean)."""

    __slots__ = ("n", "mean", "m2")

    def __init__(self) -> None:
        self.n, self.mean, self.m2 = 0, 0.0, 0.0

    def add(self, value: float) -> None:
        self.n += 1
        delta = value - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (value - self.mean)

    @property
    def variance(self) -> float:
        return max(self.m2, 0.0) / (self.n - 1)

    def relative_half_width(self) -> float | None:
        """Half-width of the 95% Student-t interval of the mean, over |mean| (None: fewer
        than 2 values, or a zero mean)."""
        if self.n < 2 or self.mean == 0:
            return None
        return _t_quantile(self.n - 1) * math.sqrt(self.variance / self.n) / abs(self.mean)


def relative_difference(mean_a: float, mean_b: float) -> float:
    """|mean_a - mean_b| over the smaller |mean| (the larger of the two ratios, - 1)."""
    low = min(abs(mean_a), abs(mean_b))
    return math.inf if low == 0 else abs(mean_a - mean_b) / low


def decide(rule: StoppingRule, cells: Sequence[CellInfo], values: Mapping[str, Mapping[int, float | None]],
           passes_done: int) -> Decisions:
    """Replay the rule over ``passes_done`` passes. ``values``: cell id -> repetition (the
    pass it ran in, from 0) -> its primary metric (None: the run failed or gave no number).
    Values of a cell after the pass it stopped in are not read.

    After each pass from ``min_n`` on:
    1. every open comparison with a new run on either side (and at least
       MIN_N_FOR_VERDICT on both) is looked at: Welch's p against the level its α-spending
       allows at its information fraction (fslab.analysis.sequential);
    2. a comparison whose two cells are both precise (interval within ±precision) and
       whose observed difference is below ``precision`` is answered without a verdict
       (any difference is smaller than the precision asked) and ends; so does one whose
       sides show no spread at all (Welch's t is undefined: no test will ever answer);
    3. a cell stops on **verdict** when every comparison it is in is significant; on
       **precision** when it is precise and every comparison it is in has ended; at
       **max**; or as **failing** when none of at least ``min_n`` runs gave a number. A
       stopped cell's open comparisons end with it.
    A stop never makes a comparison significant (no α is spent at it), so the
    false-positive rate is at most that of the spending design run to the end."""
    from .analysis.sequential import look_levels
    from .analysis.stats import MIN_N_FOR_VERDICT, NoVerdict, welch_t_from_moments

    states = {c.id: CellState(c.id) for c in cells}
    pairs = make_pairs(cells, rule)
    by_cell: dict[str, list[PairState]] = {}
    for pair in pairs:
        by_cell.setdefault(pair.a, []).append(pair)
        by_cell.setdefault(pair.b, []).append(pair)
    samples = {c.id: _Moments() for c in cells}
    for p in range(passes_done):
        active = [s for s in states.values() if not s.stopped]
        grew: set[str] = set()
        for state in active:
            if p in values.get(state.id, {}):
                state.runs += 1
                value = values[state.id][p]
                if value is not None and math.isfinite(value):
                    samples[state.id].add(float(value))
                    state.n += 1
                    grew.add(state.id)
                    state.relative_half_width = samples[state.id].relative_half_width()
        if p + 1 < rule.min_n:
            continue
        for pair in pairs:
            if pair.final or (pair.a not in grew and pair.b not in grew):
                continue
            a, b = states[pair.a], states[pair.b]
            if min(a.n, b.n) < MIN_N_FOR_VERDICT:
                continue
            try:
                fraction, level = look_levels(pair.alpha, [(x.n_a, x.n_b) for x in pair.looks] + [(a.n, b.n)],
                                              rule.max_n, rule.spending)[-1]
            except ValueError:  # no more information than at the last look
                continue
            x, y = samples[pair.a], samples[pair.b]
            try:
                p_value: float | None = welch_t_from_moments(x.mean, x.variance, x.n, y.mean, y.variance, y.n).p_value
            except NoVerdict:
                p_value = None
            pair.significant = p_value is not None and p_value < level
            pair.final = pair.significant
            pair.looks.append(LookRecord(a.n, b.n, fraction, p_value, level, pair.significant))
        precise = {s.id for s in active if s.relative_half_width is not None and s.n >= rule.min_n
                   and s.relative_half_width <= rule.precision}
        precise |= {s.id for s in states.values() if s.reason == "precision"}
        for pair in pairs:  # answered without a verdict: both precise, and the difference below the
            # precision, or no spread on either side to test it (a metric too coarse to vary)
            if not pair.final and {pair.a, pair.b} <= precise and (
                    _small(pair, samples, rule.precision) or (pair.looks and pair.looks[-1].p_value is None)):
                pair.final = True
        for state in active:
            mine = by_cell.get(state.id, [])
            if mine and all(pair.significant for pair in mine):
                state.reason = "verdict"
            elif state.id in precise and all(pair.final for pair in mine):
                state.reason = "precision"
            elif p + 1 >= rule.max_n:
                state.reason = "max"
            elif state.n == 0 and state.runs >= rule.min_n:
                state.reason = "failing"
            if state.stopped:
                state.stopped_after_pass = p
                for pair in mine:  # its open comparisons end with it, without a verdict
                    pair.final = True
    return Decisions(rule, passes_done, states, pairs)


def _small(pair: PairState, samples: Mapping[str, _Moments], precision: float) -> bool:
    a, b = samples[pair.a], samples[pair.b]
    return a.n > 0 and b.n > 0 and relative_difference(a.mean, b.mean) < precision


def scaled_p(pair: AutoPairFacts, family_alpha: float) -> float | None:
    """The last look's p rescaled so that 'scaled p < family α' holds exactly when the
    sequential test rejected: p x family α / the look's level (capped at 1). Like
    Bonferroni's m x p it preserves the decision; it is not the probability of a
    stagewise ordering of the sequential design."""
    if not pair["looks"]:
        return None
    last = pair["looks"][-1]
    if last["p_value"] is None or last["level"] <= 0:
        return None
    return min(1.0, last["p_value"] * family_alpha / last["level"])
