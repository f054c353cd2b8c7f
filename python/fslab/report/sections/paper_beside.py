"""The paper beside fslab: a study's ``[paper]`` table (fslab.paper) read back from the
stored study file, its deviations from the paper listed first, then one row per published
figure: the paper's number / fslab's measurement (mean ± 95% interval, n) / fslab's
prediction on the device model named / whether the shape holds. Any study may carry one.

The shape of a ratio figure (A over B) is the direction of A against B. fslab's direction
is Welch's t-test of the logarithms of A's runs against B's (a ratio is a difference of
logs; rates spread multiplicatively), Holm-corrected over the distinct pairs of cells the
section tests, α = 0.05, only within one backend (and guest kernel): "holds" when significant and the
paper's way; "does not hold" when significant the other way, or when the paper says
"about 1x" and fslab finds a significant difference; otherwise "cannot tell (why)". A
single figure (a value on the paper's hardware) has no shape of its own. A ratio between
two device models of one cell is not measured here; its row says which way the models point.

How much the device accounts for: where a ratio is both measured (R_m) and predicted (R_p,
the workload's own metric replayed on the model, ``pred_<model>_<metric>``), the device's
share is ln R_p / ln R_m — the part of the measured log-ratio the model reproduces. The
device explains R_p of the R_m measured; the rest, R_m / R_p, is what the models leave out
(host CPU, md's stripe handling, the page cache). A share below 0 means the model points
the other way; above 1, the model predicts more than this host shows. No share is given
when the measured ratio does not differ significantly from 1 (nothing to account for); one
without a verdict (too few runs, other backends) is given and says so.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import asdict, dataclass
from importlib import resources
from typing import Any

from pydantic import ValidationError

from ...analysis.contrasts import ratio_ci
from ...analysis.stats import CONFIDENCE, MIN_N_FOR_VERDICT, NoVerdict, holm, summarize, welch_t
from ...paper import UNITS, PaperFigure, PaperSection
from ...predictions import metric_name
from ...stored import STATUS_OK, StoredCell, StoredRun
from ..data import ModelSection, TableSection
from ..labels import cell_label, rank_group
from ..units import fmt
from .base import SECTIONS, Section, StudyData

ALPHA = 1 - CONFIDENCE
ID = "paper-beside-fslab"
HOST_SIDE = "host-side costs the models leave out (CPU, md's stripe handling, the page cache)"


@dataclass
class Side:
    """One cell's runs for a figure: its measured values and those predicted on a model."""
    label: str
    group: str
    measured: list[float]
    predicted: list[float]


@dataclass
class FigureRow:
    """One figure beside fslab, texts and numbers (the JSON keeps both)."""
    claim: str
    source: str
    paper: str
    measured: str
    predicted: str
    model: str | None
    shape: str
    measured_ratio: float | None = None
    measured_low: float | None = None
    measured_high: float | None = None
    p_adjusted: float | None = None
    predicted_ratio: float | None = None
    device_share: float | None = None
    accounts: str = ""


def paper_section(spec_text: str) -> PaperSection | None:
    """The stored study file's ``[paper]`` table (checked when the study was loaded)."""
    try:
        data = tomllib.loads(spec_text).get("paper")
    except tomllib.TOMLDecodeError:
        return None
    return None if not data else PaperSection.model_validate(data)


def shipped_paper_section(source: str) -> PaperSection | None:
    """The ``[paper]`` table of the shipped preset a stored study was run from ("preset
    seed-004"), for a study stored before its preset had one; None for a study file."""
    name = source.removeprefix("preset ")
    if name == source:
        return None
    try:
        text = (resources.files("fslab") / "presets" / f"{name}.toml").read_text()
        return paper_section(text)
    except (OSError, ValidationError):
        return None


def _same(a: Any, b: Any) -> bool:
    return bool(a == b or str(a) == str(b))


def _cell(cells: list[StoredCell], figure: PaperFigure, filesystem: str) -> StoredCell | None:
    found = [c for c in cells if c["workload"] == figure.workload and c["filesystem"] == filesystem
             and all(_same(c["axes"].get(k), v) for k, v in figure.case.items())]
    return found[0] if len(found) == 1 else None


def _models(runs: list[StoredRun], metric: str) -> list[str]:
    """Models the runs have the workload's own ``metric`` predicted on, in stored order."""
    out: list[str] = []
    for run in runs:
        for name in run["metrics"]:
            if name.startswith("pred_") and name.endswith("_" + metric):
                model = name[len("pred_"):-len(metric) - 1]
                if "_" not in model and model not in out:
                    out.append(model)
    return out


def _values(runs: list[StoredRun], name: str) -> list[float]:
    out = []
    for run in runs:
        m = run["metrics"].get(name)
        if m is not None and m["value"] is not None:
            out.append(float(m["value"]))
    return out


def _side(runs: list[StoredRun], cell: StoredCell, metric: str, model: str | None) -> Side:
    mine = [r for r in runs if r["cell"]["id"] == cell["id"] and r["status"] == STATUS_OK]
    return Side(cell_label(cell) + f" ({cell['filesystem']})", rank_group(cell), _values(mine, metric),
                _values(mine, metric_name(model, metric)) if model else [])


def _x(ratio: float) -> str:
    return f"{fmt(ratio)}x"


def _as_given(number: float) -> str:
    """A paper's number as the paper prints it (125.9, 1.4, 50), not rounded to fslab's digits."""
    return f"{number:,g}"


def _paper_ratio(f: PaperFigure) -> str:
    assert f.ratio is not None
    if f.ratio == 1 and f.relation != "about":
        return "higher (> 1x)" if f.relation == "more than" else "lower (< 1x)"
    return f"{f.relation} {_as_given(f.ratio)}x"


def _paper_direction(f: PaperFigure) -> int:
    """+1: the paper has the numerator higher, -1: lower, 0: equal ("about 1x"). A ratio
    near 1 still says which is higher: a paper that calls a 1% gap a win is judged on it."""
    assert f.ratio is not None
    if f.relation == "more than" and f.ratio >= 1:
        return 1
    if f.relation == "less than" and f.ratio <= 1:
        return -1
    return 0 if f.ratio == 1 else (1 if f.ratio > 1 else -1)


def _summary_text(values: list[float], factor: float, unit: str) -> str:
    s = summarize([v / factor for v in values])
    pm = f" ± {fmt(s.ci_half_width)}" if s.ci_half_width is not None else ""
    return f"{fmt(s.mean)}{pm} {unit} (n={s.n})"


def _ratio_text(num: list[float], den: list[float]) -> tuple[str, float | None, float | None, float | None]:
    try:
        r = ratio_ci(num, den)
    except ValueError as exc:
        return f"— ({exc})", None, None, None
    interval = f" (95% CI {fmt(r.low)}–{fmt(r.high)}x)" if r.low is not None and r.high is not None else ""
    return f"{_x(r.ratio)}{interval}, n={r.n_numerator}/{r.n_denominator}", r.ratio, r.low, r.high


def _value_row(f: PaperFigure, runs: list[StoredRun], cells: list[StoredCell]) -> FigureRow:
    assert f.value is not None and f.unit is not None
    _, factor = UNITS[f.unit]
    cell = _cell(cells, f, f.filesystem)
    paper = f"{_as_given(f.value)} {f.unit}"
    if cell is None:
        return FigureRow(f.claim, f.source, paper, "— (no such cell stored)", "—", f.model,
                         "cannot tell (no stored cell)")
    model = f.model or next(iter(_models([r for r in runs if r["cell"]["id"] == cell["id"]], f.metric)), None)
    side = _side(runs, cell, f.metric, model)
    measured = _summary_text(side.measured, factor, f.unit) if side.measured else "— (no run with a number)"
    predicted = (f"{_summary_text(side.predicted, factor, f.unit)} on {model}" if side.predicted
                 else "— (not predicted)")
    return FigureRow(f.claim, f.source, paper, measured, predicted, model,
                     "cannot tell (one figure on the paper's hardware: the ratio rows carry the shape)")


def _model_ratio_row(f: PaperFigure, runs: list[StoredRun], cells: list[StoredCell]) -> FigureRow:
    """The paper's two devices as two models of one cell: predicted only."""
    cell = _cell(cells, f, f.filesystem)
    measured = "— (one device here: the paper's two devices are two device models)"
    if cell is None:
        return FigureRow(f.claim, f.source, _paper_ratio(f), measured, "—", f.model, "cannot tell (no stored cell)")
    num = _side(runs, cell, f.metric, f.model).predicted
    den = _side(runs, cell, f.metric, f.versus_model).predicted
    if not num or not den:
        return FigureRow(f.claim, f.source, _paper_ratio(f), measured,
                         f"— ({f.metric} is not predicted on {f.model} and {f.versus_model}: the models "
                         "predict the workload's own rate only where it names one)", f.model,
                         "cannot tell (neither measured nor predicted)")
    text, ratio, _, _ = _ratio_text(num, den)
    way = ("the paper's way" if ratio is not None and _paper_direction(f) * math.log(ratio) > 0
           else "not the paper's way")
    return FigureRow(f.claim, f.source, _paper_ratio(f), measured, f"{text}, {f.model} over {f.versus_model}",
                     f.model, f"cannot tell (not measured; the models point {way})", predicted_ratio=ratio)


def _fs_ratio_row(f: PaperFigure, runs: list[StoredRun], cells: list[StoredCell]) -> tuple[FigureRow, Side, Side]:
    assert f.versus is not None
    a, b = _cell(cells, f, f.filesystem), _cell(cells, f, f.versus)
    paper = _paper_ratio(f)
    empty = Side("", "", [], [])
    if a is None or b is None:
        return (FigureRow(f.claim, f.source, paper, "— (no such cell stored)", "—", f.model,
                          "cannot tell (no stored cell)"), empty, empty)
    mine = [r for r in runs if r["cell"]["id"] in (a["id"], b["id"])]
    common = [m for m in _models([r for r in mine if r["cell"]["id"] == a["id"]], f.metric)
              if m in _models([r for r in mine if r["cell"]["id"] == b["id"]], f.metric)]
    model = f.model or next(iter(common), None)
    num, den = _side(runs, a, f.metric, model), _side(runs, b, f.metric, model)
    row = FigureRow(f.claim, f.source, paper, "— (no run with a number)", "— (not predicted)", model, "")
    if num.measured and den.measured:
        row.measured, row.measured_ratio, row.measured_low, row.measured_high = _ratio_text(num.measured, den.measured)
    if num.predicted and den.predicted:
        text, row.predicted_ratio, _, _ = _ratio_text(num.predicted, den.predicted)
        row.predicted = f"{text} on {model}"
    return row, num, den


def _p_value(num: Side, den: Side) -> tuple[float | None, str]:
    """Welch's p of the two sides' measurements, or why there is none."""
    if num.group != den.group:
        return None, f"the two cells ran on different backends ({num.group}, {den.group}): never compared"
    if min(len(num.measured), len(den.measured)) < MIN_N_FOR_VERDICT:
        return None, f"fewer than {MIN_N_FOR_VERDICT} runs on a side"
    if min(num.measured + den.measured) <= 0:
        return None, "a value of zero or below: no logarithm"
    try:
        return welch_t([math.log(v) for v in num.measured], [math.log(v) for v in den.measured]).p_value, ""
    except NoVerdict as exc:
        return None, str(exc)


def _shape(f: PaperFigure, ratio: float, p: float) -> str:
    paper, ours = _paper_direction(f), (1 if ratio > 1 else -1)
    if p >= ALPHA:
        if paper == 0:
            return f"holds (no significant difference, p={p:.2g}, as the paper's about-equal)"
        return f"cannot tell (no significant difference, p={p:.2g})"
    if paper == 0:
        return f"does not hold (the paper has them about equal; fslab: {_x(ratio)}, p={p:.2g})"
    if paper == ours:
        return f"holds ({'higher' if ours > 0 else 'lower'}, p={p:.2g})"
    return f"does not hold (fslab finds it {'higher' if ours > 0 else 'lower'}, p={p:.2g})"


def accounts_text(label: str, measured: float, predicted: float, model: str) -> tuple[float | None, str]:
    """The device's share of a measured ratio (module docstring) and the sentence saying it."""
    if measured <= 0 or predicted <= 0:
        return None, f"{label}: no share (a ratio of zero)"
    lm, lp = math.log(measured), math.log(predicted)
    share = lp / lm
    head = f"{label}: measured {_x(measured)}, {model} predicts {_x(predicted)}"
    if lp * lm < 0:
        return share, (f"{head}: the model points the other way; the measured difference is {HOST_SIDE}, "
                       "and the device alone would reverse it")
    if share > 1:
        return share, (f"{head}: the device model predicts more than this host shows ({share:.0%} of the "
                       "log-ratio); something on this host hides part of the device's difference")
    rest = measured / predicted
    return share, (f"{head}: the device model explains {_x(predicted)} of the {_x(measured)} measured "
                   f"({share:.0%} of the log-ratio); the rest, {_x(rest)}, is {HOST_SIDE}")


def figure_rows(section: PaperSection, runs: list[StoredRun], cells: list[StoredCell]) -> list[FigureRow]:
    rows: list[FigureRow] = []
    tested: list[tuple[int, PaperFigure, float, float, frozenset[str]]] = []  # (row, figure, ratio, p, pair)
    untested: list[tuple[int, PaperFigure, str, frozenset[str]]] = []  # (row, figure, why no test, pair)
    for f in section.figures:
        if f.value is not None:
            rows.append(_value_row(f, runs, cells))
        elif f.versus is None:
            rows.append(_model_ratio_row(f, runs, cells))
        else:
            row, num, den = _fs_ratio_row(f, runs, cells)
            rows.append(row)
            if row.shape:
                continue
            p, why = _p_value(num, den)
            if p is None or row.measured_ratio is None:
                row.shape = f"cannot tell ({why or 'no ratio'})"
                if num.group == den.group:  # never a share across backends
                    untested.append((len(rows) - 1, f, why, frozenset((num.label, den.label))))
            else:
                tested.append((len(rows) - 1, f, row.measured_ratio, p, frozenset((num.label, den.label))))
    pairs = list(dict.fromkeys(t[4] for t in tested))  # one family member per pair of cells
    adjusted = dict(zip(pairs, holm([next(t[3] for t in tested if t[4] == pair) for pair in pairs])))
    accounted: set[frozenset[str]] = set()  # a pair's share is said once (A/B and B/A are one fact)
    for k, f, ratio, _, pair in tested:
        p_adj = adjusted[pair]
        rows[k].p_adjusted = p_adj
        rows[k].shape = _shape(f, ratio, p_adj)
        row = rows[k]
        if row.predicted_ratio is None or pair in accounted:
            continue
        accounted.add(pair)
        if row.model and p_adj < ALPHA:
            versus = f.versus or f.filesystem
            row.device_share, row.accounts = accounts_text(f"{f.filesystem} over {versus} ({f.metric})",
                                                           ratio, row.predicted_ratio, row.model)
        else:
            row.accounts = (f"{f.filesystem} over {f.versus} ({f.metric}): no significant measured difference "
                            f"(p={p_adj:.2g}) for the device to account for")
    for k, f, why, pair in untested:  # a share without a verdict on the measured difference, said so
        row = rows[k]
        if row.measured_ratio is None or row.predicted_ratio is None or not row.model or pair in accounted:
            continue
        accounted.add(pair)
        row.device_share, text = accounts_text(f"{f.filesystem} over {f.versus} ({f.metric})", row.measured_ratio,
                                               row.predicted_ratio, row.model)
        row.accounts = f"{text} (no verdict on the measured difference: {why})"
    return rows


LEGEND = (
    "paper: the published figure, where it stands in the paper. fslab measured: mean ± half-width of the "
    "95% interval (Student t) over n runs, or for a ratio the ratio of means with its 95% interval (delta "
    "method). fslab predicted: the runs' block traces replayed on the device model named (a model's number, "
    "not measured). Shape: the direction of fslab's measured difference (Welch's t-test on the logarithms "
    "of the runs' values, Holm-corrected over the pairs of cells this table tests, α = 0.05) against the "
    "paper's, within one backend only.")
ACCOUNTS_NOTE = (
    "Device's share = ln(predicted ratio) / ln(measured ratio): the part of the measured log-ratio the "
    "device model reproduces; the rest (measured / predicted) is what the models leave out. For ratios both "
    "measured and predicted, unless the measured difference is not significant (then nothing to account for).")


def build(study: StudyData) -> list[ModelSection]:
    if study.study is None:
        return []
    section = paper_section(study.study.spec_text)
    shipped = section is None
    if shipped:
        section = shipped_paper_section(study.study.source)
    if section is None or not (section.figures or section.deviations):
        return []
    rows = figure_rows(section, study.runs, study.cells)
    table = TableSection("workload", "The paper's figures beside fslab's",
                         ["paper's figure", "source", "paper", "fslab measured", "fslab predicted (model)",
                          "does the shape hold"],
                         [[r.claim, r.source, r.paper, r.measured, r.predicted, r.shape] for r in rows], LEGEND)
    accounted = [r for r in rows if r.device_share is not None]
    sentences = [r.accounts for r in rows if r.accounts]
    tables = [table]
    if sentences:  # the sentences in the note: every renderer draws it under the table
        tables.append(TableSection(
            "prediction", "How much the device accounts for",
            ["paper's figure", "measured ratio", "predicted ratio (model)", "device's share of the log-ratio",
             "left to the host (measured / predicted)"],
            [[r.claim, _x(r.measured_ratio or 0), f"{_x(r.predicted_ratio or 0)} ({r.model})",
              f"{r.device_share:.0%}" if r.device_share is not None else "—",
              _x((r.measured_ratio or 0) / (r.predicted_ratio or 1))] for r in accounted],
            " ".join(f"{s}." for s in sentences) + " " + ACCOUNTS_NOTE))
    statements = [f"Deviation from the paper: {d}" for d in section.deviations]
    return [ModelSection(
        ID, "The paper beside fslab",
        f"{len(section.figures)} published figure(s) of the paper this study reproduces, beside what fslab "
        f"measured and predicted; {len(section.deviations)} deviation(s) from the paper's setup first."
        + (" The stored study file has no [paper] table: these are the shipped preset's, as it is now."
           if shipped else "")
        + (" A --quick run: its sizes and runs are scaled down further than the deviations say."
           if study.study.quick else ""),
        statements=statements, tables=tables,
        data={"deviations": list(section.deviations), "figures": [asdict(r) for r in rows]})]


SECTIONS.register(ID, Section(build))
