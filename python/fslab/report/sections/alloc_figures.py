"""Seed 003's figures, rebuilt from stored ``alloc`` runs: per operation (read sequential
and random, file delete, allocation+write sequential and random) the mean latency per file
system on the empty and the aged file system, with 95% intervals (Figures 4-8); the
aged/empty ratio per file system with Fieller's interval (Figure 9); the aged state and
free-space fragmentation before and after each run; and, for a study that reproduces
seed 003 (``[study] paper = "seed-003"``: the seed-003 and seed-003-usb presets), the
paper's figure names and a plain verdict on each of its three conclusions.

Statistics: per-cell means over runs with Student-t intervals (analysis.stats); every ratio
is a ratio of two independent means with Fieller's interval (analysis.fieller). A verdict
says "holds" only when every interval it rests on lies on the paper's side of 1, "does not
hold" when one lies wholly on the other side, and "cannot tell" otherwise, saying why.
Results from different backends (host kernel vs QEMU guest) are never compared."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...analysis.fieller import METHOD, FiellerRatio, fieller_ratio
from ...analysis.stats import summarize
from ...stored import STATUS_OK, StoredCell, StoredRun
from ...units import assignments_text
from ..data import Bar, ChartData, ModelSection, TableSection
from ..labels import fs_column
from ..units import display_scale, fmt
from .base import SECTIONS, Section, StudyData

PAPER = "seed-003"  # the published study whose labels and claims the section carries (StudyRow.paper)
OPS = ("seq_read", "rand_read", "delete", "seq_write", "rand_write")
OP_NAMES = {"seq_read": "read, sequential", "rand_read": "read, random", "delete": "file delete",
            "seq_write": "allocation+write, sequential", "rand_write": "allocation+write, random"}
WRITES = ("seq_write", "rand_write")
OTHERS = ("seq_read", "rand_read", "delete")
EMPTY = "empty"
# (figure, the paper's caption, operations): titles carry them only for the paper's study.
PAPER_FIGURES = {"seq_read": "Fig. 4 Block Read Performance", "rand_read": "Fig. 4 Block Read Performance",
                 "delete": "Fig. 5 File Delete Performance",
                 "seq_write": "Figs. 6 and 8 Block Write / Allocation Performance",
                 "rand_write": "Figs. 6 and 8 Block Write / Allocation Performance"}


def condition(cell: StoredCell) -> str:
    """'empty', or the aged state a cell starts from: 'aged 50% random-holes'."""
    aging = cell.get("aging")
    if not aging:
        return EMPTY
    return f"aged {float(aging['fill']):.0%} {aging['pattern']}"


def _variant(cell: StoredCell) -> str:
    """What else distinguishes alloc cells (count, bs, sync, ...): empty and aged cells of one
    variant are paired; two variants never are."""
    params = {k: v for k, v in cell["params"].items() if k != "aging"}
    return json.dumps([params, cell["axes"]], sort_keys=True, default=str)


def _variant_label(cell: StoredCell, alloc: list[StoredCell]) -> str:
    """The parameters in which this variant differs from the others, as ``name=value``
    (read generically: the workload's own parameter names stay the workload's)."""
    def shown(c: StoredCell) -> dict[str, Any]:
        return {k: v for k, v in c["params"].items() if k != "aging"}

    differing = {k for c in alloc for k, v in shown(c).items() if any(shown(o).get(k) != v for o in alloc)}
    return assignments_text((k, v) for k, v in sorted(shown(cell).items()) if k in differing)


@dataclass
class _Group:
    """One variant's latencies: (column, condition) -> op -> per-run means in ns."""
    label: str
    values: dict[tuple[str, str], dict[str, list[float]]]
    backend: dict[str, str]  # column -> backend
    fs_type: dict[str, str]  # column -> registered file system type
    columns: list[str]
    conditions: list[str]


def _groups(runs: list[StoredRun], cells: list[StoredCell]) -> list[_Group]:
    alloc = [c for c in cells if c["workload_kind"] == "alloc"]
    variants = list(dict.fromkeys(_variant(c) for c in alloc))
    out = []
    for v in variants:
        mine = [c for c in alloc if _variant(c) == v]
        label = _variant_label(mine[0], alloc) if len(variants) > 1 else ""
        g = _Group(label, {}, {}, {}, [], [])
        ids = {c["id"] for c in mine}
        for c in mine:
            col = fs_column(c)
            g.backend[col], g.fs_type[col] = c.get("backend", "host"), c["fs_type"]
            if col not in g.columns:
                g.columns.append(col)
            cond = condition(c)
            if cond not in g.conditions:
                g.conditions.append(cond)
        g.conditions.sort(key=lambda x: (x != EMPTY, x))
        for r in runs:
            if r["status"] != STATUS_OK or r["cell"]["id"] not in ids:
                continue
            key = (fs_column(r["cell"]), condition(r["cell"]))
            for op in OPS:
                m = r["metrics"].get(f"{op}_lat_mean_ns")
                if m is not None and m["value"] is not None:
                    g.values.setdefault(key, {}).setdefault(op, []).append(float(m["value"]))
        out.append(g)
    return out


def _latency_chart(g: _Group, op: str, paper: bool) -> ChartData | None:
    cells = {(col, cond): g.values.get((col, cond), {}).get(op, []) for col in g.columns for cond in g.conditions}
    if not any(cells.values()):
        return None
    magnitude = max((sum(v) / len(v) for v in cells.values() if v), default=0.0)
    d, unit = display_scale("ns", magnitude)
    title = f"{PAPER_FIGURES[op]}: {OP_NAMES[op]}" if paper else OP_NAMES[op]
    chart = ChartData(title + (f" ({g.label})" if g.label else ""), f"{op}_lat_mean_ns", unit, False,
                      list(g.conditions), list(g.columns), [])
    for (col, cond), values in cells.items():
        if values:
            chart.bars.append(_bar(col, cond, values, d))
    return chart


def _bar(col: str, case: str, values: list[float], divisor: float) -> Bar:
    s = summarize(values)
    low = high = None
    if s.ci is not None:  # Student's t, or on the log scale where it would reach below zero
        low, high = s.ci[0] / divisor, s.ci[1] / divisor
    return Bar(col, case, s.n, s.mean / divisor, low, high, [v / divisor for v in values],
               low is not None and low < 0 and min(values) >= 0)


def _ops_chart(g: _Group, cond: str, paper: bool) -> ChartData | None:
    """All operations side by side on one condition (the paper's Figure 7)."""
    per_op = {op: {col: g.values.get((col, cond), {}).get(op, []) for col in g.columns} for op in OPS}
    present = [op for op in OPS if any(per_op[op].values())]
    if not present:
        return None
    magnitude = max(sum(v) / len(v) for op in present for v in per_op[op].values() if v)
    d, unit = display_scale("ns", magnitude)
    title = ("Fig. 7 Performance Comparison of File System Operations" if paper else "operations compared")
    chart = ChartData(f"{title}, {cond}" + (f" ({g.label})" if g.label else ""), "latency_mean_ns", unit, False,
                      [OP_NAMES[op] for op in present], list(g.columns), [])
    for op in present:
        for col, values in per_op[op].items():
            if values:
                chart.bars.append(_bar(col, OP_NAMES[op], values, d))
    return chart


def aged_ratios(g: _Group) -> dict[tuple[str, str, str], FiellerRatio]:
    """(column, aged condition, op) -> aged/empty ratio of mean latencies."""
    out = {}
    for col in g.columns:
        empty = g.values.get((col, EMPTY), {})
        for cond in g.conditions:
            if cond == EMPTY:
                continue
            aged = g.values.get((col, cond), {})
            for op in OPS:
                if aged.get(op) and empty.get(op):
                    try:
                        out[(col, cond, op)] = fieller_ratio(aged[op], empty[op])
                    except ValueError:
                        continue
    return out


def _ratio_text(r: FiellerRatio) -> str:
    """'1.16× (0.70–2.34)', or '2.80× (no interval)': the reasons are in the table's note."""
    if r.bounded:
        # Fieller's set can reach below 0 when the denominator is noisy: no latency ratio is.
        low = "<0" if (r.low or 0) < 0 else fmt(r.low or 0)
        return f"{fmt(r.ratio)}× ({low} to {fmt(r.high or 0)})"
    return f"{fmt(r.ratio)}× (no interval)"


def _ratio_parts(g: _Group, ratios: dict[tuple[str, str, str], FiellerRatio],
                 paper: bool) -> tuple[list[ChartData], list[TableSection]]:
    charts, tables = [], []
    for cond in [c for c in g.conditions if c != EMPTY]:
        ops = [op for op in OPS if any((col, cond, op) in ratios for col in g.columns)]
        if not ops:
            continue
        # The chart shows allocation+write (the paper's Figure 9); reads and the delete, whose
        # sub-microsecond means make ratios jump, are in the table.
        drawn = [op for op in ops if op in WRITES] or ops
        whys = sorted({f"{col}, {OP_NAMES[op]}: {r.why}" for (col, c, op), r in ratios.items()
                       if c == cond and not r.bounded})
        ns = sorted({f"{r.n_numerator}/{r.n_denominator}" for (_, c, _), r in ratios.items() if c == cond})
        title = ("Fig. 9 Empty vs 50% Random FS: " if paper else "") + f"{cond} / empty latency"
        title += f" ({g.label})" if g.label else ""
        # The chart's heading is short: SVG charts size their width by their heading.
        chart = ChartData(("Fig. 9: " if paper else "") + f"{cond} / empty" + (f" ({g.label})" if g.label else ""),
                          "aged_over_empty_ratio", "×", False, [OP_NAMES[op] for op in drawn],
                          list(g.columns), [])
        rows = []
        for col in g.columns:
            row = [col]
            for op in ops:
                r = ratios.get((col, cond, op))
                row.append("—" if r is None else _ratio_text(r))
                if r is not None and op in drawn:
                    chart.bars.append(Bar(col, OP_NAMES[op], min(r.n_numerator, r.n_denominator), r.ratio,
                                          r.low, r.high, [], r.low is not None and r.low < 0))
            rows.append(row)
        charts.append(chart)
        tables.append(TableSection("workload", title, ["file system", *[f"{OP_NAMES[op]} (×)" for op in ops]],
                                   rows, f"Ratio of mean latencies, aged over empty (above 1: slower when "
                                   f"aged), with its 95% interval by {METHOD}; runs aged/empty: "
                                   f"{', '.join(ns)}." + (" No interval: " + "; ".join(whys) + "." if whys else "")))
    return charts, tables


# --- the paper's conclusions ---------------------------------------------------------


SHOWN = 3  # comparisons named in a verdict; the rest are counted


def _some(items: list[str]) -> str:
    named = "; ".join(items[:SHOWN])
    return named + (f"; and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


def _verdict(above: list[str], below: list[str], unsure: list[str], holds: str) -> str:
    """Each list holds one comparison per item; ``holds`` says what 'holds' rests on."""
    total = len(above) + len(below) + len(unsure)
    if below:
        return f"does not hold ({len(below)} of {total} comparisons against it: {_some(below)})"
    if unsure:
        return (f"cannot tell ({len(unsure)} of {total} comparisons have an interval that includes 1 or "
                f"none at all: {_some(unsure)})")
    return f"holds ({holds})"


def _side(r: FiellerRatio) -> int:
    """+1: the interval lies above 1, -1: below 1, 0: it contains 1 or there is none."""
    if not r.bounded:
        return 0
    assert r.low is not None and r.high is not None
    return 1 if r.low > 1 else -1 if r.high < 1 else 0


def conclusion_a(g: _Group) -> str:
    """Allocation+write dominates: every write op slower than every read and the delete,
    on each file system and condition (the paper: 20-130x)."""
    above: list[str] = []
    below: list[str] = []
    unsure: list[str] = []
    spans: list[float] = []
    for col in g.columns:
        for cond in g.conditions:
            v = g.values.get((col, cond), {})
            for w in WRITES:
                for o in OTHERS:
                    if not v.get(w) or not v.get(o):
                        continue
                    r = fieller_ratio(v[w], v[o])
                    what = f"{col} {cond}: {OP_NAMES[w]} / {OP_NAMES[o]} = {_ratio_text(r)}"
                    spans.append(r.ratio)
                    [unsure, above, below][_side(r)].append(what)
    if not spans:
        return "cannot tell (no file system has both write and read/delete latencies)"
    verdict = _verdict(above, below, unsure, f"all {len(above)} write/other ratios above 1")
    return (f"{verdict}. Here writes were {fmt(min(spans))}–{fmt(max(spans))}× slower than reads "
            "and deletes (the paper: about 130× than reads, 20× than deletes).")


def _same_backend(g: _Group, ref: str) -> tuple[list[str], list[str]]:
    same = [c for c in g.columns if c != ref and g.backend[c] == g.backend[ref]]
    other = [c for c in g.columns if c != ref and g.backend[c] != g.backend[ref]]
    return same, other


def _excluded(other: list[str]) -> str:
    return (f" Not compared (another backend: a different kernel and device): {', '.join(other)}."
            if other else "")


def conclusion_b(g: _Group) -> str:
    """FAT32 allocates fastest: every other file system's write latency is higher."""
    fat = [c for c in g.columns if g.fs_type[c] == "vfat"]
    if not fat:
        return "cannot tell (FAT32 was not measured in this study)"
    ref = fat[0]
    same, other = _same_backend(g, ref)
    if not same:
        return f"cannot tell ({ref} is the only file system on its backend).{_excluded(other)}"
    above: list[str] = []
    below: list[str] = []
    unsure: list[str] = []
    for cond in g.conditions:
        for w in WRITES:
            mine = g.values.get((ref, cond), {}).get(w)
            for col in same:
                theirs = g.values.get((col, cond), {}).get(w)
                if not mine or not theirs:
                    continue
                r = fieller_ratio(theirs, mine)
                what = f"{cond}, {OP_NAMES[w]}: {col} / {ref} = {_ratio_text(r)}"
                [unsure, above, below][_side(r)].append(what)
    if not (above or below or unsure):
        return f"cannot tell (no write latencies to compare with {ref}){_excluded(other)}"
    return _verdict(above, below, unsure, f"every other file system slower in all {len(above)} comparisons") \
        + "." + _excluded(other)


def conclusion_c(g: _Group, ratios: dict[tuple[str, str, str], FiellerRatio]) -> str:
    """ext4 loses least when aged: its aged/empty write ratio lies below every other's
    (non-overlapping 95% intervals: a conservative test)."""
    ext4 = [c for c in g.columns if g.fs_type[c] == "ext4"]
    if not ext4:
        return "cannot tell (ext4 was not measured in this study)"
    ref = ext4[0]
    same, other = _same_backend(g, ref)
    aged = [c for c in g.conditions if c != EMPTY]
    if not aged:
        return "cannot tell (no aged file system in this study)"
    if not same:
        return f"cannot tell ({ref} is the only file system on its backend).{_excluded(other)}"
    above: list[str] = []
    below: list[str] = []
    unsure: list[str] = []
    for cond in aged:
        for w in WRITES:
            mine = ratios.get((ref, cond, w))
            for col in same:
                theirs = ratios.get((col, cond, w))
                if mine is None or theirs is None:
                    continue
                what = f"{OP_NAMES[w]}: {ref} {_ratio_text(mine)} vs {col} {_ratio_text(theirs)}"
                if not mine.bounded or not theirs.bounded:
                    unsure.append(what)
                elif (mine.high or 0) < (theirs.low or 0):
                    above.append(what)
                elif (theirs.high or 0) < (mine.low or 0):
                    below.append(what)
                else:
                    unsure.append(what + " overlap")
    if not (above or below or unsure):
        return f"cannot tell (no aged/empty ratios to compare with {ref}){_excluded(other)}"
    return _verdict(above, below, unsure, f"{ref}'s ratio lies below every other's in all {len(above)} "
                    "comparisons (intervals apart)") + "." + _excluded(other)


def _state_table(runs: list[StoredRun], cells: list[StoredCell]) -> TableSection | None:
    """The aged state each run started from and its free space before and after the run:
    the issue's 'beyond the paper' facts, per file system and condition (means over runs)."""
    ids = {c["id"] for c in cells if c["workload_kind"] == "alloc"}
    rows: dict[tuple[str, str], dict[str, list[float]]] = {}
    notes: set[str] = set()
    names = ("aging_utilisation_fraction", "aging_layout_score", "aging_free_extents_count",
             "free_space_before_free_extents_count", "free_space_after_free_extents_count",
             "seq_write_fragments_count", "rand_write_fragments_count")
    for r in runs:
        if r["status"] != STATUS_OK or r["cell"]["id"] not in ids:
            continue
        d = rows.setdefault((fs_column(r["cell"]), condition(r["cell"])), {})
        for name in names:
            m = r["metrics"].get(name)
            if m is not None and m["value"] is not None:
                d.setdefault(name, []).append(float(m["value"]))
        free = r["provenance"].get("free_space_before") or {}
        if free.get("method") == "unavailable" and free.get("note"):
            notes.add(f"{fs_column(r['cell'])}: layout and free space {free['note']}.")
    if not rows:
        return None

    def cell(d: dict[str, list[float]], name: str, pct: bool = False, decimals: int | None = None) -> str:
        """``decimals``: a fixed number of them (a fraction's column reads 1.000, 0.950,
        0.998 rather than 1.00, 0.95, 0.998)."""
        v = d.get(name)
        if not v:
            return "n/a"
        s = summarize(v)
        scale = 100 if pct else 1

        def shown(x: float) -> str:
            # a half-width below the fixed decimals' last place keeps fmt's three figures, never '± 0.000'
            return fmt(x) if decimals is None or abs(x) < 0.5 * 10 ** -decimals else f"{x:.{decimals}f}"

        spread = s.ci_half_width is not None and s.ci_half_width > 1e-9 * abs(s.mean)  # not rounding noise
        hw = f" ± {shown((s.ci_half_width or 0) * scale)}" if spread else ""
        return f"{shown(s.mean * scale)}{hw}{'%' if pct else ''} (n={s.n})"

    order = {c: i for i, c in enumerate(dict.fromkeys(fs_column(c) for c in cells))}
    keys = sorted(rows, key=lambda k: (order.get(k[0], 99), k[1] != EMPTY, k[1]))
    rows = {k: rows[k] for k in keys}
    out = [[col, cond, cell(d, names[0], True), cell(d, names[1], decimals=3), cell(d, names[3]), cell(d, names[4]),
            cell(d, names[5]), cell(d, names[6])] for (col, cond), d in rows.items()]
    note = ("Means ± 95% interval over runs. Utilisation by statfs after aging; layout score: share of file "
            "blocks contiguous with their predecessor (1 = unfragmented); free extents from e2freefrag on "
            "ext2/3/4, the FAT on vfat, else from FIEMAP (gaps between files' blocks); fragments of the two "
            "files the run wrote, by FIEMAP (FIBMAP on vfat). n/a: not measured (an empty file system has no "
            "aged state; ntfs-3g reports no layout). "
            + " ".join(sorted(notes)))
    return TableSection("workload", "Aged state and fragmentation (beyond the paper)",
                        ["file system", "condition", "utilisation after aging", "layout score after aging",
                         "free extents before run", "free extents after run",
                         "fragments, sequential write file", "fragments, random write file"], out, note)


def build(study: StudyData) -> list[ModelSection]:
    runs, cells, paper = study.runs, study.cells, study.paper == PAPER
    out: list[ModelSection] = []
    for g in _groups(runs, cells):
        if not g.values:
            continue
        charts = [c for op in OPS if (c := _latency_chart(g, op, paper)) is not None]
        charts += [c for cond in g.conditions if (c := _ops_chart(g, cond, paper)) is not None]
        ratios = aged_ratios(g)
        ratio_charts, tables = _ratio_parts(g, ratios, paper)
        statements = []
        if paper:
            statements = [
                "(a) Allocation+write dominates (20–130× slower than delete and read): " + conclusion_a(g),
                "(b) FAT32 allocates fastest: " + conclusion_b(g),
                "(c) ext4 loses least when aged: " + conclusion_c(g, ratios),
            ]
        title = ("Seed 003: block allocation, empty vs aged (the paper's Figures 4–9)" if paper
                 else "Allocation micro-benchmark: empty vs aged")
        intro = ("Mean latency of one operation per file system, on the empty and the aged file system; "
                 "bars: mean over runs, whiskers: 95% Student-t interval, dots: each run. Ratios: aged over "
                 f"empty with {METHOD}.")
        if paper:
            intro += (" The paper's three conclusions, each judged from the intervals: 'holds' only when every "
                      "interval it rests on is on the paper's side of 1.")
        sections = [ModelSection(f"alloc{'-' + str(len(out)) if out else ''}", title + (f" — {g.label}" if g.label
                                 else ""), intro, statements, charts + ratio_charts, tables)]
        out += sections
    state = _state_table(runs, cells)
    if state is not None and out:
        out[-1].tables.append(state)
    return out


SECTIONS.register("alloc-figures", Section(build, order=30, workload_kind="alloc"))
