"""Building the report model (report.data) of one stored study, from the store only
(``Store.study/runs/cells``): the comparison rows with each file system against the
row's best, the findings in plain words, the charts, failed runs, provenance, and every
registered section (report.sections). Every renderer — terminal, HTML, Markdown, JSON —
draws what this builds, so they cannot disagree about a number."""

from __future__ import annotations

import shlex

from ..analysis.contrasts import ratio_ci
from ..analysis.stats import summarize
from ..metrics import display_name
from ..stored import STATUS_OK, AutoFacts, StoredCell, StoredRun, StudyRow
from ..units import assignments_text, counted
from .case_definitions import device_sections
from .data import SCHEMA, Bar, Caveat, ChartData, Estimate, FailedRun, Finding, Report, SummaryRow, Versus
from .hosts import warning_lines as host_warning_lines
from .labels import (
    caveat_mark,
    cell_label,
    difference_text,
    fs_column,
    mean_pm,
    n_text,
    p_text,
    rank_groups_note,
    verdict_text,
    versus_sentence,
    with_devices,
)
from .members import warning_lines as member_warning_lines
from .provenance_facts import facts_by_group
from .sections import StudyData, build_sections
from .stopping import legend as auto_legend
from .stopping import sequential_verdicts
from .tables import LEGEND, MetricChoice, RowData, TableData, build_table
from .units import display_scale


def _versus(row: RowData, fs: str) -> Versus | None:
    """``fs`` against the best of its own rank group (None: it is that best, alone in its
    group, or the best's mean is zero)."""
    best = row.best_for(fs)
    comparison = row.comparisons.get(fs)
    if best is None or fs == best or comparison is None:
        return None
    try:
        r = ratio_ci(row.values[fs], row.values[best])
    except ValueError:  # the best mean is zero: no relative difference
        return None
    relative = r.ratio - 1
    low = None if r.low is None else r.low - 1
    high = None if r.high is None else r.high - 1
    text = difference_text(relative, low, high)
    if comparison.untested or comparison.p_adjusted is None:
        why = f"no verdict: {comparison.untested or 'too few runs'}"
        return Versus(best, relative, low, high, None, False, None, why, 0, text, why)
    family = row.families.get(row.group_of[fs], 1)
    verdict = verdict_text(comparison.significant, low, high, family,
                           sequential="group-sequential" in comparison.method)
    return Versus(best, relative, low, high, comparison.p_adjusted, comparison.significant,
                  comparison.effect_size, comparison.method, family, text, verdict)


def finding_text(row: SummaryRow, est: Estimate) -> str:
    """One plain sentence: this file system against the best of its group, in the table's
    terms (its difference in %, the interval of that difference, the verdict)."""
    v = est.versus_best
    assert v is not None
    best = next(e for e in row.estimates if e.filesystem == v.reference)
    p = "" if v.p_adjusted is None else f"{p_text(v.p_adjusted)}, "
    return versus_sentence(row.label, f"{display_name(row.metric)} [{row.display_unit}]", est.filesystem,
                           v.reference, v.relative, v.low, v.high, p + n_text(est.n, best.n), v.verdict)


def _summary_table(runs: list[StoredRun], cells: list[StoredCell], metric: MetricChoice,
                   auto: AutoFacts | None = None) -> tuple[TableData, list[SummaryRow]]:
    table = build_table(runs, metric, cells)
    if auto is not None:  # an auto study: the verdicts of the test that decided its stops
        sequential_verdicts(table, cells, auto)
    return table, rows_from_table(table, cells)


def rows_from_table(table: TableData, cells: list[StoredCell] | None = None) -> list[SummaryRow]:
    """The comparison table's rows as model rows (``cells`` give each row's workload and case;
    without them a row is its own workload)."""
    where = {cell_label(c): (c["workload"], assignments_text(c["axes"].items()) or "all")
             for c in cells or []}
    out: list[SummaryRow] = []
    for row in table.rows:
        magnitude = max((s.mean for s in row.summaries.values()), default=0.0)
        divisor, unit = display_scale(row.unit, magnitude)
        estimates = [Estimate(fs, s.n, s.mean, s.ci_half_width, row.values[fs], mean_pm(s, divisor),
                              _versus(row, fs), row.group_of[fs]) for fs, s in row.summaries.items()]
        notes = [f"{fs}: {counted(len(v), 'run')} without a number ({v[0]})" for fs, v in row.no_number.items()]
        notes += [f"{fs}: {counted(k, 'run')} failed" for fs, k in row.failed.items()]
        fs_notes: dict[str, list[str]] = {}
        for fs, v in row.no_number.items():
            fs_notes.setdefault(fs, []).append(f"{len(v)}x {v[0]}")
        for fs, k in row.failed.items():
            fs_notes.setdefault(fs, []).append(f"{k} failed")
        workload, case = where.get(row.label, (row.label, "all"))
        out.append(SummaryRow(row.label, workload, case, row.metric, row.unit, unit, divisor,
                              row.higher_is_better, dict(row.bests), estimates, notes, fs_notes, ranked=row.ranked))
    return out


def _findings(rows: list[SummaryRow]) -> list[Finding]:
    out: list[Finding] = []
    for row in rows:
        for est in row.estimates:
            if est.versus_best is not None:
                out.append(Finding(finding_text(row, est), est.versus_best.significant, row.label, row.metric,
                                   decided=est.versus_best.p_adjusted is not None))
    return out


def caveats(runs: list[StoredRun], rows: list[SummaryRow], columns: list[str]) -> list[Caveat]:
    """The caveats the runs' provenance holds (fslab.job.execute), one Caveat per distinct
    text, numbered in the order a reader meets their first cell in the table (row by row,
    left to right); each row's cells get the marks of theirs."""
    counts: dict[tuple[str, str], int] = {}  # (row label, column) -> ok runs
    found: dict[str, dict[tuple[str, str], int]] = {}  # text -> (row label, column) -> runs with it
    for run in runs:
        if run["status"] != STATUS_OK:
            continue
        where = (cell_label(run["cell"]), fs_column(run["cell"]))
        counts[where] = counts.get(where, 0) + 1
        for text in run["provenance"].get("caveats") or []:
            places = found.setdefault(str(text), {})
            places[where] = places.get(where, 0) + 1
    position = {row.label: k for k, row in enumerate(rows)}
    by_label = {row.label: row for row in rows}

    def in_table(where: tuple[str, str]) -> tuple[int, int]:
        label, column = where
        return position.get(label, len(rows)), columns.index(column) if column in columns else len(columns)

    out: list[Caveat] = []
    ordered = sorted(found.items(), key=lambda item: min(map(in_table, item[1])))
    for number, (text, places) in enumerate(ordered, 1):
        mark = caveat_mark(number)
        out.append(Caveat(mark, text, [f"{column} on {label} ({places[(label, column)]} of "
                                       f"{counts[(label, column)]} runs)"
                                       for label, column in sorted(places, key=in_table)]))
        for label, column in places:
            if label in by_label:
                by_label[label].caveats.setdefault(column, []).append(mark)
    return out


def _charts(rows: list[SummaryRow], filesystems: list[str]) -> list[ChartData]:
    """One chart per workload and metric: its cases on the x axis, a bar per file system,
    one display unit for the whole chart."""
    groups: dict[tuple[str, str], list[SummaryRow]] = {}
    for row in rows:
        groups.setdefault((row.workload, row.metric), []).append(row)
    out: list[ChartData] = []
    for (workload, metric), group in groups.items():
        magnitude = max((abs(e.mean) for r in group for e in r.estimates), default=0.0)
        d, unit = display_scale(group[0].unit, magnitude)
        chart = ChartData(f"{workload}: {display_name(metric)}", metric, unit, group[0].higher_is_better, [], [], [])
        for row in group:
            chart.cases.append(row.case)
            for est in row.estimates:
                if est.filesystem not in chart.filesystems:
                    chart.filesystems.append(est.filesystem)
                interval = summarize(est.values).ci  # on the log scale where ± would cross zero
                low, high = (None, None) if interval is None else (interval[0] / d, interval[1] / d)
                crosses = low is not None and low < 0 and min(est.values) >= 0
                chart.bars.append(Bar(est.filesystem, row.case, est.n, est.mean / d, low, high,
                                      [v / d for v in est.values], crosses))
        chart.filesystems.sort(key=filesystems.index)
        if chart.bars:  # a workload whose runs all failed has nothing to draw; its table row says why
            out.append(chart)
    return out


def _failed(runs: list[StoredRun], results_dir: str) -> list[FailedRun]:
    out: list[FailedRun] = []
    for r in runs:
        if r["status"] == STATUS_OK:
            continue
        reason = (r["error"] or "no reason recorded").strip().splitlines()[0]
        out.append(FailedRun(fs_column(r["cell"]), cell_label(r["cell"]), r["repetition"] + 1, reason,
                             f"{results_dir}/{r['artifact_dir']}" if r["artifact_dir"] else "", r["run_id"],
                             shlex.join(["fslab", "report", *(["-r", results_dir] if results_dir else []),
                                         "--run", str(r["run_id"])])))
    return out


def provenance_rows(runs: list[StoredRun], quick: bool,
                    columns: list[str]) -> list[list[str]]:
    """[field, value per file system]; runs that failed before the file system was made
    add nothing but '—'."""
    facts = facts_by_group(runs, lambda r: fs_column(r["cell"]), quick)
    return [[name, *[by_fs.get(fs, "—") for fs in columns]] for name, by_fs in facts.items()]


def build_report(study: StudyRow, runs: list[StoredRun], cells: list[StoredCell],
                 metric: MetricChoice = None, results_dir: str = "") -> Report:
    """The whole report of one stored study, from the store's records only. The trace
    plots are left empty: reading trace files is not free (report.outputs adds them)."""
    auto = study.facts.get("auto")
    # Entries on several devices (seed-004: one SSD, RAID0, RAID5) are ranked per device.
    cells, runs = with_devices(cells, runs, device_sections(study.spec_text))
    table, rows = _summary_table(runs, cells, metric, auto)
    filesystems = table.filesystems
    tables, sections = build_sections(StudyData(runs, cells, study.paper, auto, study))
    groups_note = rank_groups_note(table.groups)
    return Report(
        schema=SCHEMA, study_id=study.id, name=study.name, source=study.source, status=study.status,
        quick=study.quick, filesystems=filesystems, rows=rows, findings=_findings(rows),
        charts=_charts(rows, filesystems), provenance_columns=filesystems,
        provenance=provenance_rows(runs, study.quick, filesystems), failed=_failed(runs, results_dir),
        skipped=list(study.skipped), tables=tables, runs_stored=len(runs),
        # An auto study plans its maximum; once complete, the runs it decided to make are its plan.
        runs_planned=len(runs) if auto and study.status == "complete" else study.planned_runs,
        legend=(f"{groups_note}\n" if groups_note else "") + LEGEND + (auto_legend(auto) if auto else ""),
        trace_plots=[], trace_missing=[], sections=sections,
        host_warnings=[line.strip() for line in host_warning_lines(runs, study.quick)],
        device_warnings=[line.strip() for line in member_warning_lines(runs)],
        rank_groups=table.groups, caveats=caveats(runs, rows, filesystems),
    )
