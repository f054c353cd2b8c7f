"""The paper beside fslab: a study's ``[paper]`` table (fslab.paper) read back from the
stored study file, its deviations from the paper listed first, then one row per published
figure: the paper's number / fslab's measurement (mean ± 95% interval, n) / fslab's
prediction on the device model named / whether the shape holds. Any study may carry one.

A ratio's sides may differ in file-system entry, workload, case, metric or device model
(fslab.paper); a group claim (several entries, or ``across`` cases) is judged pair by pair
and its row says in how many pairs it holds.

The shape of a ratio figure (A over B) is the direction of A against B, and its size. fslab's direction
is Welch's t-test of the logarithms of A's runs against B's (a ratio is a difference of
logs; rates spread multiplicatively), Holm-corrected over the distinct pairs of cells the
section tests, α = 0.05, only within one backend (and guest kernel): "holds" when significant and the
paper's way; "does not hold" when significant the other way, or when the paper says
"about 1x" and fslab finds a significant difference; otherwise "cannot tell (why)". A
ratio the paper gives a size for holds only within 2x of it (paper_judge); outside, the row
says how far off and which way, predicted ratios alike. A
single figure (a value on the paper's hardware) has no shape of its own. A ratio between
two device models of one cell is not measured here; its row says which way the models point.

How much the device accounts for: where a ratio is both measured (R_m) and predicted (R_p,
the workload's own metric replayed on the model, ``pred_<model>_<metric>``), the device's
share is ln R_p / ln R_m — the part of the measured log-ratio the model reproduces. The
device explains R_p of the R_m measured; the rest, R_m / R_p, is what the models leave out
(host CPU, the page cache, md's stripe handling where the study has md). A share below 0
means the model points the other way; above 1, the model predicts more than this host
shows. A share is computed only for a significant measured difference: not when it is
not significant or has no verdict (a share of noise), and not for runs in a guest under
TCG (software emulation: the emulator's CPU sets the measured ratio). The row says which.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from importlib import resources
from statistics import fmean
from typing import Any

from pydantic import ValidationError

from ...analysis.stats import CONFIDENCE, holm, summarize
from ...datarecords import asdict
from ...paper import SIZE_TOLERANCE, UNITS, PaperFigure, PaperSection
from ...paper import Side as PaperSide
from ...stored import StoredCell, StoredRun
from ...units import counted
from ..data import ModelSection, TableSection
from ..units import fmt
from .base import SECTIONS, Section, StudyData
from .paper_judge import (
    as_given,
    paper_direction,
    paper_ratio_text,
    size_judgement,
    unmeasured_verdict,
)
from .paper_pairs import (
    Pair,
    cell_of,
    figure_pairs,
    models_of,
    ratio_text,
    runs_of,
    values_of,
    x_text,
)

ALPHA = 1 - CONFIDENCE
ID = "paper-beside-fslab"
TCG = ("the runs ran in a QEMU guest under TCG (software emulation, CPU-bound): the emulator's CPU cost sets "
       "the measured ratio, not the device")


def host_side_text(runs: list[StoredRun], cells: list[StoredCell]) -> str:
    """What the models leave out, naming only what this study has: md's stripe handling
    only where an entry ran on md RAID (its cells say so, or its runs traced members)."""
    md = any((c.get("device") or {}).get("kind") == "raid" for c in cells) or any(
        name.startswith("trace_members_") for r in runs for name in r["metrics"])
    return ("host-side costs the models leave out (CPU, the page cache" + (", md's stripe handling" if md else "")
            + ")")


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
    size_holds: bool | None = None  # the measured ratio within 2x of the paper's (None: no size or no test)
    pairs_holding: int | None = None  # a group claim: pairs that hold, of pairs_compared
    pairs_compared: int | None = None


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


def _summary_text(values: list[float], factor: float, unit: str) -> str:
    s = summarize([v / factor for v in values])
    pm = f" ± {fmt(s.ci_half_width)}" if s.ci_half_width is not None else ""
    return f"{fmt(s.mean)}{pm} {unit} (n={s.n})"


def _interval_misses(f: PaperFigure, low: float, high: float) -> bool:
    """The whole interval more than SIZE_TOLERANCE from the paper's ratio, on one side."""
    assert f.ratio is not None
    below, above = high < f.ratio / SIZE_TOLERANCE, low > f.ratio * SIZE_TOLERANCE
    return below if f.relation == "more than" else above if f.relation == "less than" else below or above


def _shape(f: PaperFigure, ratio: float, p: float, low: float | None = None,
           high: float | None = None) -> tuple[str, bool | None]:
    """The verdict on a tested ratio: direction (Welch, Holm-adjusted p) and size. Without a
    significant difference, a paper's size the whole 95% interval stays more than 2x away
    from is still refused: "about 10x" against a ratio known to lie within 0.9–1.1x."""
    paper, ours = paper_direction(f), (1 if ratio > 1 else -1)
    ok, size = size_judgement(f, ratio)
    if p >= ALPHA:
        if paper == 0:
            return f"holds (no significant difference, p={p:.2g}, as the paper's about-equal)", None
        if low is not None and high is not None and ok is False and _interval_misses(f, low, high):
            return (f"does not hold by size (no significant difference, p={p:.2g}; its 95% interval "
                    f"{fmt(low)}–{fmt(high)}x is more than 2x from the paper's: {size})"), False
        return f"cannot tell (no significant difference, p={p:.2g})", None
    if paper == 0:
        return f"does not hold (the paper has them about equal; fslab: {x_text(ratio)}, p={p:.2g})", False
    if paper != ours:
        return f"does not hold (fslab finds it {'higher' if ours > 0 else 'lower'}, p={p:.2g})", False
    way = f"{'higher' if ours > 0 else 'lower'} as the paper's, p={p:.2g}"
    if ok is False:
        return f"does not hold by size ({way}; but {size})", False
    return f"holds ({way}{'; ' + size if size else ''})", ok


def _value_row(f: PaperFigure, runs: list[StoredRun], cells: list[StoredCell]) -> FigureRow:
    assert f.value is not None and f.unit is not None
    _, factor = UNITS[f.unit]
    side = PaperSide(f.workload, f.denominator, tuple(sorted(f.case.items())), f.metric)
    cell = cell_of(cells, side)
    paper = f"{as_given(f.value)} {f.unit}"
    if cell is None:
        return FigureRow(f.claim, f.source, paper, "— (no such cell stored)", "—", f.model,
                         "cannot tell (no stored cell)")
    model = f.model or next(iter(models_of(runs_of(runs, cell), f.metric)), None)
    values = values_of(runs, cell, side, model)
    measured = "— (no run with a number)"
    if values.measured:
        measured = (f"{_summary_text(values.measured, factor, f.unit)} "
                    f"({fmt(fmean(values.measured) / factor / f.value)}x the paper's)")
    predicted = "— (not predicted)"
    if values.predicted:
        k = fmean(values.predicted) / factor / f.value
        predicted = f"{_summary_text(values.predicted, factor, f.unit)} on {model} ({fmt(k)}x the paper's)"
    return FigureRow(f.claim, f.source, paper, measured, predicted, model,
                     "cannot tell (one figure of the paper's setup, not this one's: the ratio rows carry the shape)")


def _ratio_span(ratios: list[float]) -> str:
    """"ratio 1.2x" for one value (or several that print alike), else "ratios 0.9x to 1.4x"."""
    low, high = x_text(min(ratios)), x_text(max(ratios))
    return f"ratio {low}" if low == high else f"ratios {low} to {high}"


def _model_ratio_row(f: PaperFigure, pairs: list[Pair], model: str | None) -> FigureRow:
    """The paper's two devices as two models of one cell: predicted only."""
    measured = "— (one device here: the paper's two devices are two device models)"
    [pair] = pairs
    if pair.missing:
        return FigureRow(f.claim, f.source, paper_ratio_text(f), measured, "—", f.model, "cannot tell (no stored cell)")
    if not pair.num.predicted or not pair.den.predicted:
        return FigureRow(f.claim, f.source, paper_ratio_text(f), measured,
                         f"— ({f.metric} is not predicted on {f.model} and {f.versus_model}: the models "
                         "predict the workload's own rate only where it names one)", f.model,
                         "cannot tell (neither measured nor predicted)")
    text, ratio, low, high = ratio_text(pair.num.predicted, pair.den.predicted)
    way = unmeasured_verdict(f, ratio, low, high) if ratio is not None else "no ratio"
    return FigureRow(f.claim, f.source, paper_ratio_text(f), measured, f"{text}, {f.model} over {f.versus_model}",
                     f.model, f"cannot tell (not measured; the models point {way})", predicted_ratio=ratio)


def _predicted_text(f: PaperFigure, pair: Pair, model: str | None) -> str:
    if pair.predicted_ratio is None:
        return "— (not predicted)"
    low = high = None
    if pair.num_base is None:
        text, _, low, high = ratio_text(pair.num.predicted, pair.den.predicted)
    else:
        text = f"{x_text(pair.predicted_ratio)} (change over change)"
    return f"{text} on {model}: {unmeasured_verdict(f, pair.predicted_ratio, low, high)}"


def _single_row(f: PaperFigure, pair: Pair, model: str | None) -> FigureRow:
    row = FigureRow(f.claim, f.source, paper_ratio_text(f), pair.measured_text, _predicted_text(f, pair, model),
                    model, "", pair.measured_ratio, pair.measured_low, pair.measured_high,
                    predicted_ratio=pair.predicted_ratio)
    if pair.missing:
        row.measured, row.predicted, row.shape = f"— ({pair.missing})", "—", "cannot tell (no stored cell)"
    elif pair.p_adjusted is None or pair.measured_ratio is None:
        row.shape = f"cannot tell ({pair.why or 'no ratio'})"
    else:
        row.p_adjusted = pair.p_adjusted
        row.shape, row.size_holds = _shape(f, pair.measured_ratio, pair.p_adjusted, pair.measured_low,
                                           pair.measured_high)
    return row


def _group_row(f: PaperFigure, pairs: list[Pair], model: str | None) -> FigureRow:
    """A group claim: each pair judged as a figure of its own; the row counts them."""
    verdicts: list[tuple[Pair, str]] = []
    for pair in pairs:
        if pair.missing:
            verdicts.append((pair, "missing"))
        elif pair.p_adjusted is None or pair.measured_ratio is None:
            verdicts.append((pair, "untested"))
        else:
            shape, _ = _shape(f, pair.measured_ratio, pair.p_adjusted, pair.measured_low, pair.measured_high)
            verdicts.append((pair, shape.split(" (")[0]))
    held = [p for p, v in verdicts if v == "holds"]
    against = [p for p, v in verdicts if v.startswith("does not hold")]
    open_ = [p for p, v in verdicts if v not in ("holds",) and not v.startswith("does not hold")]
    ratios = [p.measured_ratio for p in pairs if p.measured_ratio is not None]
    measured = (f"{counted(len(ratios), 'pair')}, {_ratio_span(ratios)}" if ratios else "— (no pair with numbers)")
    predicted_ratios = [p.predicted_ratio for p in pairs if p.predicted_ratio is not None]
    predicted = "— (not predicted)"
    if predicted_ratios:
        way = sum(1 for r in predicted_ratios if (r > 1) == (paper_direction(f) > 0))
        predicted = (f"on {model}: {way} of {counted(len(predicted_ratios), 'pair')} the paper's way "
                     f"({_ratio_span(predicted_ratios)})")
    decided = len(held) + len(against)
    if decided == 0:
        reasons = sorted({p.missing or p.why or ("no significant difference" if p.p_adjusted is not None
                                                 else "no ratio") for p in open_})
        shape = f"cannot tell (no pair decided: {'; '.join(reasons)})"
    elif not against:
        shape = (f"holds in {'all' if decided > 1 else 'the'} {counted(decided, 'decided pair')}"
                 + (f"; {len(open_)} undecided" if open_ else ""))
    else:
        most = "mostly holds" if len(held) > len(against) else "does not hold"
        shape = (f"{most}: holds in {len(held)} of {counted(decided, 'decided pair')}; not in "
                 + "; ".join(f"{p.label}: {x_text(p.measured_ratio or 0)}" for p in against[:3])
                 + (" …" if len(against) > 3 else "")
                 + (f"; {len(open_)} undecided" if open_ else ""))
    return FigureRow(f.claim, f.source, paper_ratio_text(f) + f" in each of {counted(len(pairs), 'pair')}", measured,
                     predicted, model, shape, pairs_holding=len(held), pairs_compared=decided)


def _share(f: PaperFigure, pair: Pair, row: FigureRow, host_side: str) -> None:
    """The device's share of a single pair's measured ratio, or why none is computed."""
    if pair.predicted_ratio is None or not row.model or pair.missing or pair.num_base is not None:
        return
    what = f"{row.claim}"
    if pair.num.tcg or pair.den.tcg:
        row.accounts = f"{what}: no device's share computed: {TCG}"
    elif pair.p_adjusted is None or pair.measured_ratio is None:
        row.accounts = (f"{what}: no device's share computed: no verdict on the measured difference "
                        f"({pair.why or 'no ratio'}), and a share of an untested difference may be a share of noise")
    elif pair.p_adjusted >= ALPHA:
        row.accounts = (f"{what}: no device's share computed: no significant measured difference "
                        f"(p={pair.p_adjusted:.2g}) for the device to account for")
    else:
        row.device_share, row.accounts = accounts_text(what, pair.measured_ratio, pair.predicted_ratio,
                                                       row.model, host_side)


def accounts_text(label: str, measured: float, predicted: float, model: str,
                  host_side: str = "host-side costs the models leave out (CPU, the page cache)",
                  ) -> tuple[float | None, str]:
    """The device's share of a measured ratio (module docstring) and the sentence saying it."""
    if measured <= 0 or predicted <= 0 or measured == 1:
        return None, f"{label}: no share (a ratio of zero or of exactly 1)"
    lm, lp = math.log(measured), math.log(predicted)
    share = lp / lm
    head = f"{label}: measured {x_text(measured)}, {model} predicts {x_text(predicted)}"
    if lp * lm < 0:
        return share, (f"{head}: the model points the other way; the measured difference is {host_side}, "
                       "and the device alone would reverse it")
    if share > 1 + 1e-9:  # not a rounding of exactly 1
        return share, (f"{head}: the device model predicts more than this host shows ({share:.0%} of the "
                       "log-ratio); something on this host hides part of the device's difference")
    rest = measured / predicted
    return share, (f"{head}: the device model explains {x_text(predicted)} of the {x_text(measured)} measured "
                   f"({share:.0%} of the log-ratio); the rest, {x_text(rest)}, is {host_side}")


def figure_rows(section: PaperSection, runs: list[StoredRun], cells: list[StoredCell]) -> list[FigureRow]:
    """One row per figure, its pairs tested as one Holm family over the distinct pairs of
    cells the section tests (a pair named by several figures is one test)."""
    built: list[tuple[PaperFigure, list[Pair], str | None]] = []
    for f in section.figures:
        if f.value is not None:
            built.append((f, [], None))
        else:
            pairs, model = figure_pairs(f, runs, cells)
            built.append((f, pairs, model))
    tested = [p for f, pairs, _ in built if f.versus_model is None for p in pairs
              if p.p is not None and p.measured_ratio is not None]
    keys = list(dict.fromkeys(p.key for p in tested))
    first = {key: next(p.p for p in tested if p.key == key and p.p is not None) for key in keys}
    adjusted = dict(zip(keys, holm([first[k] for k in keys])))
    for p in tested:
        p.p_adjusted = adjusted[p.key]
    host_side = host_side_text(runs, cells)
    rows: list[FigureRow] = []
    accounted: set[frozenset[str]] = set()  # a pair's share is said once (A/B and B/A are one fact)
    for f, pairs, model in built:
        if f.value is not None:
            rows.append(_value_row(f, runs, cells))
        elif f.versus_model is not None:
            rows.append(_model_ratio_row(f, pairs, model))
        elif f.is_group:
            rows.append(_group_row(f, pairs, model))
        else:
            [pair] = pairs
            row = _single_row(f, pair, model)
            if pair.key not in accounted:
                _share(f, pair, row, host_side)
                if row.accounts:
                    accounted.add(pair.key)
            rows.append(row)
    return rows


LEGEND = (
    "paper: the published figure, where it stands in the paper. fslab measured: mean ± half-width of the "
    "95% interval (Student t) over n runs, or for a ratio the ratio of means with its 95% interval (delta "
    "method). fslab predicted: the runs' block traces replayed on the device model named (a model's number, "
    "not measured). Shape: the direction of fslab's measured difference (Welch's t-test on the logarithms "
    "of the runs' values, Holm-corrected over the pairs of cells this table tests, α = 0.05) against the "
    "paper's, within one backend only, and its size: a ratio within 2x of the paper's holds, otherwise the row "
    "says how far off and which way ('more than X' holds from X/2 up). A group claim is judged pair by pair.")
ACCOUNTS_NOTE = (
    "Device's share = ln(predicted ratio) / ln(measured ratio): the part of the measured log-ratio the "
    "device model reproduces; the rest (measured / predicted) is what the models leave out. Computed only "
    "for a significant measured difference (not for noise, an untested difference or runs under TCG).")


def _is_bytes(key: str, value: Any) -> bool:
    return (key == "ram" or key.endswith("size")) and isinstance(value, int) and value >= 1024


def quick_sizes(cells: list[StoredCell]) -> str:
    """What a --quick run actually ran, per workload: its sizing parameters and memory
    limit as stored in its cells (not the preset's full sizes the deviations speak of)."""
    def bytes_text(n: int) -> str:
        for div, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
            if n >= div:
                return f"{n / div:.4g} {unit}"
        return f"{n} B"

    parts: list[str] = []
    for workload in dict.fromkeys(c["workload"] for c in cells):
        mine = [c for c in cells if c["workload"] == workload]
        params = mine[0].get("params", {})
        # The parameters the workload's quick() changed, as the plan recorded them.
        scaled = mine[0].get("quick_scaled") or {}
        sized = [f"{k}={bytes_text(v) if _is_bytes(k, v) else v}"
                 for k in scaled if (v := params.get(k)) not in (None, "auto")]
        memory = {c.get("memory_bytes") for c in mine} - {None}
        if memory:
            sized.append("memory limit " + ", ".join(bytes_text(m) for m in sorted(m for m in memory if m)))
        if sized:
            parts.append(f"{workload}: {', '.join(sized)}")
    return "; ".join(parts)


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
    if sentences and not accounted:  # no share to tabulate: the sentences follow the figures' table
        table.note += " How much the device accounts for: " + " ".join(f"{s}." for s in sentences) \
            + " " + ACCOUNTS_NOTE
    elif sentences:  # the sentences in the note: every renderer draws it under the table
        tables.append(TableSection(
            "prediction", "How much the device accounts for",
            ["paper's figure", "measured ratio", "predicted ratio (model)", "device's share of the log-ratio",
             "left to the host (measured / predicted)"],
            [[r.claim, x_text(r.measured_ratio or 0), f"{x_text(r.predicted_ratio or 0)} ({r.model})",
              f"{r.device_share:.0%}" if r.device_share is not None else "—",
              x_text((r.measured_ratio or 0) / (r.predicted_ratio or 1))] for r in accounted],
            " ".join(f"{s}." for s in sentences) + " " + ACCOUNTS_NOTE))
    statements = [f"Deviation from the paper: {d}" for d in section.deviations]
    if study.study.quick and study.cells:
        statements.append(f"Deviation from the paper and from the deviations above: a --quick run, sizes as run: "
                          f"{quick_sizes(study.cells)}")
    return [ModelSection(
        ID, "The paper beside fslab",
        f"{counted(len(section.figures), 'published figure')} of the paper this study reproduces, beside what fslab "
        f"measured and predicted; {counted(len(section.deviations), 'deviation')} from the paper's setup first."
        + (" The stored study file has no [paper] table: these are the shipped preset's, as it is now."
           if shipped else "")
        + (f" A --quick run: it ran smaller than the deviations say ({quick_sizes(study.cells)})."
           if study.study.quick else ""),
        statements=statements, tables=tables,
        data={"deviations": list(section.deviations), "figures": [asdict(r) for r in rows]})]


SECTIONS.register(ID, Section(build, order=300))
