"""The pairs of sides a ``[paper]`` ratio figure compares (fslab.paper), resolved against
a study's stored cells and runs: each side's measured values and its values predicted on
the figure's model, the ratio of means with its interval, and the test of the direction
(Welch's t on the logarithms, or ``paper_judge.change_test`` for a ratio of changes), within
one rank group (backend, guest kernel and device) only. The section (paper_beside) judges
and words them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from ...analysis.contrasts import ratio_ci
from ...analysis.stats import MIN_N_FOR_VERDICT, NoVerdict, welch_t
from ...paper import PaperFigure
from ...paper import Side as PaperSide
from ...predictions import metric_name
from ...stored import STATUS_OK, StoredCell, StoredRun
from ...units import assignments_text
from ..labels import rank_group
from ..predicted import models_in
from ..units import fmt
from .paper_judge import change_test


@dataclass
class Values:
    """One side's runs for a figure: its measured values and those predicted on a model."""
    label: str
    group: str
    measured: list[float]
    predicted: list[float]
    tcg: bool = False


@dataclass
class Pair:
    """One pair of sides of a ratio figure, measured, predicted and tested."""
    label: str
    num: Values
    den: Values
    num_base: Values | None = None
    den_base: Values | None = None
    measured_ratio: float | None = None
    measured_low: float | None = None
    measured_high: float | None = None
    measured_text: str = "— (no run with a number)"
    predicted_ratio: float | None = None
    p: float | None = None
    p_adjusted: float | None = None
    why: str = ""
    missing: str = ""  # a side with no stored cell: why the pair is not compared

    @property
    def key(self) -> frozenset[str]:
        """The pair of cells (and baselines) it tests: A/B and B/A are one test."""
        return frozenset((self.num.label + (self.num_base.label if self.num_base else ""),
                          self.den.label + (self.den_base.label if self.den_base else "")))


def same_value(a: Any, b: Any) -> bool:
    return bool(a == b or str(a) == str(b))


def cell_of(cells: list[StoredCell], side: PaperSide) -> StoredCell | None:
    found = [c for c in cells if c["workload"] == side.workload and c["filesystem"] == side.filesystem
             and all(same_value(c["axes"].get(k), v) for k, v in side.case)]
    return found[0] if len(found) == 1 else None


def axes_of(cells: list[StoredCell]) -> dict[str, dict[str, list[Any]]]:
    """Workload -> axis -> its values, as the stored cells have them (for ``across``)."""
    out: dict[str, dict[str, list[Any]]] = {}
    for c in cells:
        for k, v in c["axes"].items():
            values = out.setdefault(c["workload"], {}).setdefault(k, [])
            if not any(same_value(v, w) for w in values):
                values.append(v)
    return out


def models_of(runs: list[StoredRun], metric: str) -> list[str]:
    """Models the runs have the workload's own ``metric`` predicted on, in stored order."""
    return [m for m in models_in(runs) if any(metric_name(m, metric) in r["metrics"] for r in runs)]


def values_named(runs: list[StoredRun], name: str) -> list[float]:
    out = []
    for run in runs:
        m = run["metrics"].get(name)
        if m is not None and m["value"] is not None:
            out.append(float(m["value"]))
    return out


def runs_of(runs: list[StoredRun], cell: StoredCell) -> list[StoredRun]:
    return [r for r in runs if r["cell"]["id"] == cell["id"] and r["status"] == STATUS_OK]


def side_label(side: PaperSide) -> str:
    case = assignments_text(side.case, " ")
    return f"{side.workload}{f' [{case}]' if case else ''} ({side.filesystem}, {side.metric})"


def values_of(runs: list[StoredRun], cell: StoredCell, side: PaperSide, model: str | None) -> Values:
    mine = runs_of(runs, cell)
    tcg = any(((r.get("provenance") or {}).get("guest") or {}).get("accelerator") == "tcg" for r in mine)
    return Values(side_label(side), rank_group(cell), values_named(mine, side.metric),
                  values_named(mine, metric_name(model, side.metric)) if model else [], tcg)


def x_text(ratio: float) -> str:
    return f"{fmt(ratio)}x"


def ratio_text(num: list[float], den: list[float]) -> tuple[str, float | None, float | None, float | None]:
    try:
        r = ratio_ci(num, den)
    except ValueError as exc:
        return f"— ({exc})", None, None, None
    interval = f" (95% CI {fmt(r.low)}–{fmt(r.high)}x)" if r.low is not None and r.high is not None else ""
    return f"{x_text(r.ratio)}{interval}, n={r.n_numerator}/{r.n_denominator}", r.ratio, r.low, r.high


def change_ratio(a: list[float], a0: list[float], b: list[float], b0: list[float]) -> float | None:
    """(mean a / mean a0) over (mean b / mean b0): a ratio of two changes."""
    if not (a and a0 and b and b0) or min(fmean(a0), fmean(b), fmean(b0)) <= 0:
        return None
    return (fmean(a) / fmean(a0)) / (fmean(b) / fmean(b0))


def figure_model(f: PaperFigure, runs: list[StoredRun], cells: list[StoredCell]) -> str | None:
    """The figure's model, or the first every stored cell of it was replayed on."""
    if f.model is not None:
        return f.model
    common: list[str] | None = None
    for cell in cells:
        found = models_of(runs_of(runs, cell), f.metric)
        common = found if common is None else [m for m in common if m in found]
    return next(iter(common or []), None)


def figure_pairs(f: PaperFigure, runs: list[StoredRun], cells: list[StoredCell]) -> tuple[list[Pair], str | None]:
    """The figure's pairs of sides with their measured and predicted ratios (untested)."""
    sides = f.pairs(axes_of(cells))
    resolved: list[tuple[PaperSide, PaperSide, dict[str, StoredCell | None]]] = []
    involved: list[StoredCell] = []
    for num, den in sides:
        wanted: dict[str, PaperSide | None] = {"num": num, "den": den}
        if f.baseline_workload is not None:
            wanted |= {"num_base": f.baseline(num), "den_base": f.baseline(den)}
        found = {k: cell_of(cells, s) for k, s in wanted.items() if s is not None}
        involved += [c for c in found.values() if c is not None]
        resolved.append((num, den, found))
    model = figure_model(f, runs, list({c["id"]: c for c in involved}.values()))
    out: list[Pair] = []
    for num, den, found in resolved:
        label = f"{side_label(num)} over {side_label(den)}"
        lacking = [k for k, c in found.items() if c is None]
        if lacking:
            empty = Values("", "", [], [])
            out.append(Pair(label, empty, empty, missing="no such cell stored"))
            continue
        cell = {k: c for k, c in found.items() if c is not None}
        pair = Pair(label, values_of(runs, cell["num"], num, model),
                    values_of(runs, cell["den"], den, f.versus_model or model))
        if f.baseline_workload is not None:
            pair.num_base = values_of(runs, cell["num_base"], f.baseline(num) or num, model)
            pair.den_base = values_of(runs, cell["den_base"], f.baseline(den) or den, model)
        measure(pair)
        out.append(pair)
    return out, model


def measure(pair: Pair) -> None:
    """The pair's measured and predicted ratios and its test (p, or why none)."""
    a, b = pair.num, pair.den
    if pair.num_base is not None and pair.den_base is not None:
        a0, b0 = pair.num_base, pair.den_base
        pair.measured_ratio = change_ratio(a.measured, a0.measured, b.measured, b0.measured)
        if pair.measured_ratio is not None:
            pair.measured_text = (f"{x_text(pair.measured_ratio)} (change over change), n={len(a.measured)}/"
                                  f"{len(a0.measured)} over {len(b.measured)}/{len(b0.measured)}")
        pair.predicted_ratio = change_ratio(a.predicted, a0.predicted, b.predicted, b0.predicted)
        groups = {a.group, b.group, a0.group, b0.group}
        if len(groups) > 1:
            pair.why = f"the cells ran on different backends or devices ({', '.join(sorted(groups))}): never compared"
        elif pair.measured_ratio is not None:
            try:
                pair.p = change_test(a.measured, a0.measured, b.measured, b0.measured)
            except NoVerdict as exc:
                pair.why = str(exc)
        return
    if a.measured and b.measured:
        pair.measured_text, pair.measured_ratio, pair.measured_low, pair.measured_high = ratio_text(
            a.measured, b.measured)
    if a.predicted and b.predicted:
        pair.predicted_ratio = ratio_text(a.predicted, b.predicted)[1]
    pair.p, pair.why = p_value(a, b)


def p_value(num: Values, den: Values) -> tuple[float | None, str]:
    """Welch's p of the two sides' measurements, or why there is none."""
    if num.group != den.group:
        return None, f"the two cells ran on different backends or devices ({num.group}, {den.group}): never compared"
    if min(len(num.measured), len(den.measured)) < MIN_N_FOR_VERDICT:
        return None, f"fewer than {MIN_N_FOR_VERDICT} runs on a side"
    if min(num.measured + den.measured) <= 0:
        return None, "a value of zero or below: no logarithm"
    try:
        return welch_t([math.log(v) for v in num.measured], [math.log(v) for v in den.measured]).p_value, ""
    except NoVerdict as exc:
        return None, str(exc)
