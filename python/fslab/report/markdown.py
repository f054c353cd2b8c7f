"""The report as Markdown (GitHub-flavoured tables) for papers and issue trackers: the same
sections as the HTML report, without charts (their numbers are in the results table).

Every text that comes from the results (names, labels, reasons, notes) passes through
``md_text`` (or ``md_code`` in a code span) on its way in, as the HTML renderer escapes its
text: a study named ``<img src=x onerror=...>`` is shown as those characters, never run by
a viewer that renders raw HTML in Markdown, and ``![x](url)`` is no image."""

from __future__ import annotations

import re
from html import escape
from urllib.parse import quote

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
from .summary import caveat_lines, sequential_p, summary_table
from .units import fmt

# A backslash or backtick of the text would escape or open a code span; "](" would end a
# link's text ([text](url), ![image](url)); '<', '>' and '&' become HTML entities (no raw
# HTML, as the HTML renderer escapes). Brackets alone stay: units read "iops [IOPS]".
_MD_ACTIVE = str.maketrans({"\\": "\\\\", "`": "\\`"})


def md_text(text: object) -> str:
    """Text from the results, safe in Markdown prose and table cells: no raw HTML, no link,
    image or code span of its own, one line."""
    return escape(str(text), quote=False).translate(_MD_ACTIVE).replace("](", "]\\(").replace("\n", " ")


def md_code(text: object) -> str:
    """Text as one inline code span (a command, a path): its own backticks cannot end it."""
    value = str(text).replace("\n", " ")
    longest = max((len(run) for run in re.findall("`+", value)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def _cell(text: str) -> str:
    return md_text(text).replace("|", "\\|")


def md_table(columns: list[str], rows: list[list[str]]) -> str:
    """A table of texts from the results (each cell escaped)."""
    return _md_table(columns, [[_cell(v) for v in row] for row in rows])


def _md_table(columns: list[str], cells: list[list[str]]) -> str:
    """A table whose cells are Markdown already (escaped by the caller)."""
    lines = ["| " + " | ".join(_cell(c) for c in columns) + " |",
             "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in cells]
    return "\n".join(lines)


def _section(t: TableSection) -> str:
    alerts = set(t.alerts)  # cells a reader must not miss: in bold
    rows = [[f"**{_cell(v)}**" if (k, i) in alerts else _cell(v) for i, v in enumerate(row)]
            for k, row in enumerate(t.rows)]
    return f"#### {md_text(t.title)}\n\n{_md_table(t.columns, rows)}\n" + (f"\n{note_md(t.note)}\n" if t.note else "")


def note_md(note: str) -> str:
    """A note of one or more lines, each its own paragraph (md_text makes each one line)."""
    return "\n\n".join(md_text(line) for line in note.split("\n") if line)


def _chart_table(chart: ChartData) -> str:
    """A chart's numbers (Markdown has no charts): one row per bar."""
    rows = [[b.filesystem, b.case, fmt(b.mean),
             f"{fmt(b.low)}–{fmt(b.high)}" if b.low is not None and b.high is not None else "—", str(b.n)]
            for b in chart.bars]
    return f"#### {md_text(chart.title)}\n\n" + md_table(
        ["file system", "case", f"mean [{chart.display_unit}]", "95% interval", "n"], rows) + "\n"


def _model_section(m: ModelSection) -> str:
    """A section of its own (a section plug-in's, e.g. seed 003's figures)."""
    out = [f"## {md_text(m.title)}", "", md_text(m.intro), ""]
    out += [f"- {md_text(s)}" for s in m.statements] + ([""] if m.statements else [])
    out += [_chart_table(c) for c in m.charts] + [_section(t) for t in m.tables]
    out += [note_md(m.note), ""] if m.note else []
    return "\n".join(out)


def _trace_plots(report: Report, figures: dict[str, str]) -> list[str]:
    """Each trace plot as an image link to its PNG beside the file (``figures``: plot id ->
    relative path), or, when none was written, its caption alone."""
    if not report.trace_plots and not report.trace_missing:
        return []
    out = ["## Block-trace plots", ""]
    if report.trace_missing:
        out += [f"> Trace files missing, their runs left out: {md_text(', '.join(report.trace_missing))}", ""]
    for p in report.trace_plots:
        link = quote(figures.get(p.id, ""))  # a file name of any characters stays one link target
        out += [f"![{md_text(p.title)}]({link})" if p.id in figures else f"**{md_text(p.title)}** (figure not written)",
                "", md_text(p.caption), ""]
    return out


def render_markdown(report: Report, figures: dict[str, str] | None = None) -> str:
    out = [f"# {md_text(report.name)}", "",
           f"Study {report.study_id} from {md_code(report.source)} — {md_text(report.status)}, {report.runs_stored} of "
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
            out += [f"> **{md_text(head)}**", *[f"> - {md_text(f)}" for f in facts], ""]
    out += ["**Significant differences**", ""] + [f"- {md_text(f.text)}" for f in sig] + [""] if sig else \
        ["No significant difference was found.", ""]
    if rest:
        out += ["**No significant difference**", ""] + [f"- {md_text(f.text)}" for f in rest] + [""]
    if undecided:
        out += ["**No verdict**", ""] + [f"- {md_text(f.text)}" for f in undecided] + [""]
    out += [md_text(interval_note(sequential_p(report))), "", "## Results", ""]
    columns, rows = summary_table(report)
    out += [md_table(columns, rows), ""]
    out += [f"- {md_text(line)}" for line in caveat_lines(report)] + ([""] if report.caveats else [])
    out += ["\n\n".join(md_text(line) for line in report.legend.split("\n")), ""]
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
    out += [f"- skipped {md_text(s['filesystem'])}: {md_text(s['reason'])}" for s in report.skipped]
    if not report.failed and not report.skipped:
        out += ["None."]
    out += ["", "## Provenance", "", md_table(["fact", *report.provenance_columns], report.provenance), ""]
    return "\n".join(out)


def render_compare_markdown(c: Comparison) -> str:
    """A compare (`fslab compare`) as Markdown."""
    out = [f"# fslab compare: A = {md_text(c.a)}, B = {md_text(c.b)}", "",
           f"Comparing two {md_text(c.mode)}; {md_text(variable_text(c))}.", "", "## Summary", ""]
    out += [f"- ⚠ {md_text(line)}" for line in [left_out_line(c)] if line]
    out += [f"- {md_text(line)}" for line in summary_lines(c)] + ["", "## Other differences between A and B", ""]
    warnings = warning_lines(c)
    out += [f"- ⚠ {md_text(w)}" for w in warnings] if warnings else [
        f"None among the {c.cases_compared} compared cases." if c.not_compared else
        "None besides the variable under test."]
    out += [f"- under test: {md_text(d.fact)}: A {md_text(d.a)} / B {md_text(d.b)}"
            for d in c.differences if d.under_test]
    out += ["", "## Not compared", ""]
    out += [f"- ⚠ {md_text(line)}" for line in not_compared_lines(c)] or ["None: every case of A and B was compared."]
    columns, rows = table_rows(c)
    out += ["", "## Comparisons", "", md_table(columns, rows) if rows else "No case was compared.", "",
            md_text(method_note(c)), ""]
    return "\n".join(out)
