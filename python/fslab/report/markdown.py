"""The report as Markdown (GitHub-flavoured tables) for papers and issue trackers: the same
sections as the HTML report, without charts (their numbers are in the results table)."""

from __future__ import annotations

from .compare import (
    Comparison,
    left_out_line,
    method_note,
    not_compared_lines,
    summary_lines,
    table_rows,
    variable_text,
    warning_lines,
)
from .data import ChartData, ModelSection, Report, TableSection
from .labels import interval_note
from .summary import caveat_lines, summary_table
from .units import fmt


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def md_table(columns: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(_cell(c) for c in columns) + " |",
             "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _section(t: TableSection) -> str:
    alerts = set(t.alerts)  # cells a reader must not miss: in bold
    rows = [[f"**{v}**" if (k, i) in alerts else v for i, v in enumerate(row)] for k, row in enumerate(t.rows)]
    return f"#### {t.title}\n\n{md_table(t.columns, rows)}\n" + (f"\n{t.note}\n" if t.note else "")


def _chart_table(chart: ChartData) -> str:
    """A chart's numbers (Markdown has no charts): one row per bar."""
    rows = [[b.filesystem, b.case, fmt(b.mean),
             f"{fmt(b.low)}–{fmt(b.high)}" if b.low is not None and b.high is not None else "—", str(b.n)]
            for b in chart.bars]
    return f"#### {chart.title}\n\n" + md_table(
        ["file system", "case", f"mean [{chart.display_unit}]", "95% interval", "n"], rows) + "\n"


def _model_section(m: ModelSection) -> str:
    """A section of its own (a section plug-in's, e.g. seed 003's figures)."""
    out = [f"## {m.title}", "", m.intro, ""]
    out += [f"- {s}" for s in m.statements] + ([""] if m.statements else [])
    out += [_chart_table(c) for c in m.charts] + [_section(t) for t in m.tables]
    out += [m.note, ""] if m.note else []
    return "\n".join(out)


def _trace_plots(report: Report, figures: dict[str, str]) -> list[str]:
    """Each trace plot as an image link to its PNG beside the file (``figures``: plot id ->
    relative path), or, when none was written, its caption alone."""
    if not report.trace_plots and not report.trace_missing:
        return []
    out = ["## Block-trace plots", ""]
    if report.trace_missing:
        out += [f"> Trace files missing, their runs left out: {', '.join(report.trace_missing)}", ""]
    for p in report.trace_plots:
        out += [f"![{p.title}]({figures[p.id]})" if p.id in figures else f"**{p.title}** (figure not written)",
                "", p.caption, ""]
    return out


def render_markdown(report: Report, figures: dict[str, str] | None = None) -> str:
    out = [f"# {report.name}", "",
           f"Study {report.study_id} from `{report.source}` — {report.status}, {report.runs_stored} of "
           f"{report.runs_planned} runs stored.", ""]
    if report.quick:
        out += ["> **QUICK run**: sizes and runtimes scaled down — a smoke test, not for conclusions.", ""]
    sig = [f for f in report.findings if f.significant]
    rest = [f for f in report.findings if not f.significant and f.decided]
    undecided = [f for f in report.findings if not f.decided]
    out += ["## Summary", ""]
    for warnings in (report.host_warnings, report.device_warnings):
        if warnings:
            head, *facts = warnings
            out += [f"> **{head}**", *[f"> - {f}" for f in facts], ""]
    out += ["**Significant differences**", ""] + [f"- {f.text}" for f in sig] + [""] if sig else \
        ["No significant difference was found.", ""]
    if rest:
        out += ["**No significant difference**", ""] + [f"- {f.text}" for f in rest] + [""]
    if undecided:
        out += ["**No verdict**", ""] + [f"- {f.text}" for f in undecided] + [""]
    out += [interval_note(), "", "## Results", ""]
    columns, rows = summary_table(report)
    out += [md_table(columns, rows), ""]
    out += [f"- {line}" for line in caveat_lines(report)] + ([""] if report.caveats else [])
    out += [report.legend.replace("\n", "\n\n"), ""]
    out += [_model_section(m) for m in report.sections]
    measured = [t for t in report.tables if t.kind != "prediction"]
    predicted = [t for t in report.tables if t.kind == "prediction"]
    if measured:
        out += ["## Workload and trace tables", ""] + [_section(t) for t in measured]
    out += _trace_plots(report, figures or {})
    if predicted:
        out += ["## Predictions on device models (not measured)", ""] + [_section(t) for t in predicted]
    out += ["## Failed and skipped runs", ""]
    if report.failed:
        out += [md_table(["file system", "workload", "repetition", "reason", "details", "run id"],
                         [[f.filesystem, f.workload, str(f.repetition), f.reason, f.details,
                              "—" if f.run_id is None else str(f.run_id)]
                          for f in report.failed]), "",
                "`fslab report --run ID` shows one run whole: its error, parameters, artifacts and raw output.", ""]
    out += [f"- skipped {s['filesystem']}: {s['reason']}" for s in report.skipped]
    if not report.failed and not report.skipped:
        out += ["None."]
    out += ["", "## Provenance", "", md_table(["fact", *report.provenance_columns], report.provenance), ""]
    return "\n".join(out)


def render_compare_markdown(c: Comparison) -> str:
    """A compare (`fslab compare`) as Markdown."""
    out = [f"# fslab compare: A = {c.a}, B = {c.b}", "", f"Comparing two {c.mode}; {variable_text(c)}.", "",
           "## Summary", ""]
    out += [f"- ⚠ {line}" for line in [left_out_line(c)] if line]
    out += [f"- {line}" for line in summary_lines(c)] + ["", "## Other differences between A and B", ""]
    warnings = warning_lines(c)
    out += [f"- ⚠ {w}" for w in warnings] if warnings else [
        f"None among the {c.cases_compared} compared cases." if c.not_compared else
        "None besides the variable under test."]
    out += [f"- under test: {d.fact}: A {d.a} / B {d.b}" for d in c.differences if d.under_test]
    out += ["", "## Not compared", ""]
    out += [f"- ⚠ {line}" for line in not_compared_lines(c)] or ["None: every case of A and B was compared."]
    columns, rows = table_rows(c)
    out += ["", "## Comparisons", "", md_table(columns, rows) if rows else "No case was compared.", "",
            method_note(c), ""]
    return "\n".join(out)
