"""Building the report model (report.data) of one stored study, from the store only
(``Store.study/runs/cells``): the comparison rows with each file system against the
row's best, the findings in plain words, the charts, failed runs, provenance, and every
registered section (report.sections). Every renderer — terminal, HTML, Markdown, JSON —
draws what this builds, so they cannot disagree about a number."""

from __future__ import annotations

from ..analysis.contrasts import ratio_ci
from ..metrics import display_name
from ..stored import STATUS_OK, AutoFacts, StoredCell, StoredRun, StudyRow
from .data import SCHEMA, Bar, ChartData, Estimate, FailedRun, Finding, Report, SummaryRow, Versus
from .hosts import warning_lines as host_warning_lines
from .labels import cell_label, fs_column, mean_pm, n_text, p_text
from .members import warning_lines as member_warning_lines
from .provenance_facts import facts_by_group
from .sections import StudyData, build_sections
from .stopping import legend as auto_legend
from .stopping import sequential_verdicts
from .tables import LEGEND, RowData, TableData, build_table
from .units import display_scale, fmt


def _versus(row: RowData, fs: str) -> Versus | None:
    best = row.best
    if best is None or fs == best:
        return None
    mine, theirs = row.values.get(fs, []), row.values.get(best, [])
    comparison = row.comparisons.get(fs)
    try:
        r = ratio_ci(mine, theirs)
    except ValueError:  # the best mean is zero: no relative difference
        return None
    low = None if r.low is None else r.low - 1
    high = None if r.high is None else r.high - 1
    if comparison is None or comparison.untested or comparison.p_adjusted is None:
        why = comparison.untested if comparison is not None and comparison.untested else "too few runs"
        return Versus(best, r.ratio - 1, low, high, None, False, None, f"no verdict: {why}")
    return Versus(best, r.ratio - 1, low, high, comparison.p_adjusted, comparison.significant,
                  comparison.effect_size, comparison.method)


def _ratio_words(r: float, low: float | None, high: float | None) -> tuple[str, str]:
    """(how much, interval) for best / other = r: '58% higher' or, from 2x on, '3.1×'."""
    def pct(x: float) -> str:
        return f"{abs(x - 1) * 100:.0f}%" if abs(x - 1) >= 0.095 else f"{abs(x - 1) * 100:.1f}%"

    if r >= 2 or r <= 0.5:
        interval = f"95% CI {fmt(low)}–{fmt(high)}×, " if low is not None and high is not None else ""
        return f"{fmt(r)}×", interval
    word = "higher" if r >= 1 else "lower"
    interval = ""
    if low is not None and high is not None:
        a, b = sorted(((low - 1) * 100, (high - 1) * 100))
        interval = f"95% CI {a:+.0f}% to {b:+.0f}%, " if a < 0 < b else \
            f"95% CI {min(abs(a), abs(b)):.0f}–{max(abs(a), abs(b)):.0f}%, "
    return f"{pct(r)} {word}", interval


def finding_text(row: SummaryRow, est: Estimate) -> str:
    """One plain sentence: how the row's best compares with this file system."""
    v = est.versus_best
    assert v is not None and row.best is not None
    best = next(e for e in row.estimates if e.filesystem == row.best)
    # Said from the best's side: best / other, its interval the inverse of other / best's.
    r = 1 / (1 + v.relative)
    low = None if v.high is None or v.high <= -1 else 1 / (1 + v.high)
    high = None if v.low is None or v.low <= -1 else 1 / (1 + v.low)
    how, interval = _ratio_words(r, low, high)
    what = f"{display_name(row.metric)} [{row.display_unit}]"
    p = "no verdict" if v.p_adjusted is None else p_text(v.p_adjusted)
    stats = f"{interval}{p}, {n_text(best.n, est.n)}"
    if v.significant:
        amount = f"{how} the {what} of" if how.endswith("×") else f"{how} {what} than"
        return f"On {row.label}, {row.best} had {amount} {est.filesystem} ({stats})."
    if v.p_adjusted is None:
        return (f"On {row.label}, {row.best} vs {est.filesystem} in {what}: {v.method} "
                f"(observed: {row.best} {how}; {stats}).")
    return (f"On {row.label}, {row.best} and {est.filesystem} showed no significant difference in {what} "
            f"(observed: {row.best} {how}; {stats}).")


def _summary_rows(runs: list[StoredRun], cells: list[StoredCell], metric: str | None,
                  auto: AutoFacts | None = None) -> tuple[list[str], list[SummaryRow]]:
    table = build_table(runs, metric, cells)
    if auto is not None:  # an auto study: the verdicts of the test that decided its stops
        sequential_verdicts(table, cells, auto)
    return table.filesystems, rows_from_table(table, cells)


def rows_from_table(table: TableData, cells: list[StoredCell] | None = None) -> list[SummaryRow]:
    """The comparison table's rows as model rows (``cells`` give each row's workload and case;
    without them a row is its own workload)."""
    where = {cell_label(c): (c["workload"], ", ".join(f"{k}={v}" for k, v in c["axes"].items()) or "all")
             for c in cells or []}
    out: list[SummaryRow] = []
    for row in table.rows:
        magnitude = max((s.mean for s in row.summaries.values()), default=0.0)
        divisor, unit = display_scale(row.unit, magnitude)
        estimates = [Estimate(fs, s.n, s.mean, s.ci_half_width, row.values[fs], mean_pm(s, divisor),
                              _versus(row, fs)) for fs, s in row.summaries.items()]
        notes = [f"{fs}: {len(v)} run(s) without a number ({v[0]})" for fs, v in row.no_number.items()]
        notes += [f"{fs}: {k} run(s) failed" for fs, k in row.failed.items()]
        fs_notes: dict[str, list[str]] = {}
        for fs, v in row.no_number.items():
            fs_notes.setdefault(fs, []).append(f"{len(v)}x {v[0]}")
        for fs, k in row.failed.items():
            fs_notes.setdefault(fs, []).append(f"{k} failed")
        workload, case = where.get(row.label, (row.label, "all"))
        out.append(SummaryRow(row.label, workload, case, row.metric, row.unit, unit, divisor,
                              row.higher_is_better, row.best if len(row.summaries) > 1 else None,
                              estimates, notes, fs_notes))
    return out


def _findings(rows: list[SummaryRow]) -> list[Finding]:
    out: list[Finding] = []
    for row in rows:
        for est in row.estimates:
            if est.versus_best is not None:
                out.append(Finding(finding_text(row, est), est.versus_best.significant, row.label, row.metric,
                                   decided=est.versus_best.p_adjusted is not None))
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
                low = high = None
                if est.half_width is not None:
                    low, high = (est.mean - est.half_width) / d, (est.mean + est.half_width) / d
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
                             f"{results_dir}/{r['artifact_dir']}" if r["artifact_dir"] else "", r["run_id"]))
    return out


def provenance_rows(runs: list[StoredRun], quick: bool,
                    columns: list[str]) -> list[list[str]]:
    """[field, value per file system]; runs that failed before the file system was made
    add nothing but '—'."""
    facts = facts_by_group(runs, lambda r: fs_column(r["cell"]), quick)
    return [[name, *[by_fs.get(fs, "—") for fs in columns]] for name, by_fs in facts.items()]


def build_report(study: StudyRow, runs: list[StoredRun], cells: list[StoredCell],
                 metric: str | None = None, results_dir: str = "") -> Report:
    """The whole report of one stored study, from the store's records only. The trace
    plots are left empty: reading trace files is not free (report.outputs adds them)."""
    auto = study.facts.get("auto")
    filesystems, rows = _summary_rows(runs, cells, metric, auto)
    tables, sections = build_sections(StudyData(runs, cells, study.paper, auto, study))
    return Report(
        schema=SCHEMA, study_id=study.id, name=study.name, source=study.source, status=study.status,
        quick=study.quick, filesystems=filesystems, rows=rows, findings=_findings(rows),
        charts=_charts(rows, filesystems), provenance_columns=filesystems,
        provenance=provenance_rows(runs, study.quick, filesystems), failed=_failed(runs, results_dir),
        skipped=list(study.skipped), tables=tables, runs_stored=len(runs),
        # An auto study plans its maximum; once complete, the runs it decided to make are its plan.
        runs_planned=len(runs) if auto and study.status == "complete" else study.planned_runs,
        legend=LEGEND + (auto_legend(auto) if auto else ""), trace_plots=[], trace_missing=[], sections=sections,
        host_warnings=[line.strip() for line in host_warning_lines(runs, study.quick)],
        device_warnings=[line.strip() for line in member_warning_lines(runs)],
    )
