"""The report as one self-contained HTML file: inline CSS and SVG, no script, no network.
Sections (each a <section id=…> so tests and readers can find them): summary in plain
words, comparison table, charts, workload tables, trace tables, predictions (apart and
labelled as not measured), failed and skipped runs, provenance."""

from __future__ import annotations

from html import escape

from ..units import counted
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
from .data import ModelSection, Report, TableSection, TracePlot
from .labels import interval_note
from .summary import caveat_lines, sequential_p, summary_table
from .svg import chart_svg, legend_html

CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1180px;
 color:#222;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;border-bottom:1px solid #ddd;padding-bottom:3px;
 margin-top:28px}
.meta{color:#555}.warn{background:#fff4d6;border-left:4px solid #e0a800;padding:6px 10px}
table{border-collapse:collapse;margin:8px 0;font-size:13px;display:block;max-width:100%;overflow-x:auto}
th,td{border:1px solid #ddd;padding:3px 8px;vertical-align:top;overflow-wrap:break-word}
th:first-child,td:first-child{min-width:11em}
th{background:#f4f4f4;text-align:left}
td.num{text-align:right;white-space:nowrap}
.sig{font-weight:600}.nosig{color:#555}
.charts{display:flex;flex-wrap:wrap;gap:18px}.chart{background:#fff;border:1px solid #eee}
.ct{font-size:13px;font-weight:600}.tick{font-size:11px;fill:#333}.axis{font-size:12px;fill:#222}
.grid{stroke:#e6e6e6}.axisline{stroke:#444}.err{stroke:#111;stroke-width:1.4}
.pt{stroke:#111;stroke-width:.6}.crosses{fill:#fff;stroke:#c00;stroke-width:1.5}
.key{margin-right:14px;white-space:nowrap}.sw{display:inline-block;width:12px;height:12px;
 margin-right:5px;vertical-align:-1px;opacity:.8}
.pred{border:2px dashed #999;padding:4px 12px;background:#fafafa}
.tplots{display:flex;flex-wrap:wrap;gap:14px}.tplot{margin:0;width:560px}.tplot img{width:100%;height:auto;
 border:1px solid #eee}.tplot figcaption{font-size:12px;color:#444}.lossy figcaption b{color:#c00}
small,.note{color:#555}.alert{color:#c00;font-weight:600}
#paper-beside-fslab td.num{white-space:normal;min-width:7em}
"""


def _table(columns: list[str], rows: list[list[str]], numeric_from: int = 1, cls: str = "",
           numeric_to: int = 999, alerts: frozenset[tuple[int, int]] = frozenset()) -> str:
    """A table; cells from column ``numeric_from`` to before ``numeric_to`` right-aligned,
    the ``alerts`` cells (row, column) marked so that they stand out."""
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    body = []
    for k, row in enumerate(rows):
        tds = []
        for i, v in enumerate(row):
            classes = " ".join(c for c in ("num" if numeric_from <= i < numeric_to else "",
                                           "alert" if (k, i) in alerts else "") if c)
            tds.append(f'<td class="{classes}">{escape(v)}</td>' if classes else f"<td>{escape(v)}</td>")
        body.append(f"<tr>{''.join(tds)}</tr>")
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def note_html(note: str) -> str:
    """A note of one or more lines, each its own paragraph (HTML would run them together)."""
    return "".join(f'<p class="note">{escape(line)}</p>' for line in note.split("\n") if line)


def _section_table(t: TableSection) -> str:
    return f"<h3>{escape(t.title)}</h3>{_table(t.columns, t.rows, 2, alerts=frozenset(t.alerts))}{note_html(t.note)}"


def trace_plots_html(report: Report) -> str:
    """LBA-over-time and size-CDF plots of the traced runs, inline PNG, per workload."""
    if not report.trace_plots and not report.trace_missing:
        return ""
    parts = ['<section id="trace-plots"><h2>Block-trace plots</h2><p class="note">Measured on the device '
             "under test (block layer, tracefs), the requests its trace tables count: on an md array the bios "
             "the file system issued to the md device, not its member disks' requests; each caption names "
             "which. Size CDFs pool the requests of every run of a file system; LBA plots show one run each.</p>"]
    if report.trace_missing:
        parts.append('<p class="warn">Trace files missing, their runs left out: '
                     + escape(", ".join(report.trace_missing)) + "</p>")
    by_workload: dict[str, list[TracePlot]] = {}
    for plot in report.trace_plots:
        by_workload.setdefault(plot.workload, []).append(plot)
    for workload, plots in by_workload.items():
        parts.append(f"<h3>{escape(workload)}</h3>")
        for kind in ("size_cdf", "lba"):  # a row of CDFs, then the file systems' LBA plots side by side
            parts.append(_plot_row([p for p in plots if p.kind == kind]))
    parts.append("</section>")
    return "".join(parts)


def _plot_row(plots: list[TracePlot]) -> str:
    if not plots:
        return ""
    parts = ["<div class=tplots>"]
    for p in plots:
        caption = escape(p.caption)
        if not p.complete:
            caption = caption.replace("INCOMPLETE", "<b>INCOMPLETE</b>", 1)
        parts.append(f'<figure class="tplot{"" if p.complete else " lossy"}" id="plot-{escape(p.id)}" '
                     f'data-kind="{p.kind}"><img alt="{escape(p.title)}" src="{p.data_uri()}">'
                     f"<figcaption>{caption}</figcaption></figure>")
    parts.append("</div>")
    return "".join(parts)


def _model_section(m: ModelSection, filesystems: list[str]) -> str:
    """A section of its own (a section plug-in's, e.g. seed 003's figures)."""
    out = [f'<section id="{escape(m.id)}"><h2>{escape(m.title)}</h2><p>{escape(m.intro)}</p>']
    if m.statements:
        out.append("<ul>" + "".join(f"<li>{escape(s)}</li>" for s in m.statements) + "</ul>")
    if m.charts:
        names = list(dict.fromkeys(fs for c in m.charts for fs in c.filesystems))
        out.append(f"<p>{legend_html([fs for fs in filesystems if fs in names])}</p><div class=charts>"
                   + "".join(chart_svg(c, filesystems) for c in m.charts) + "</div>")
    out += [_section_table(t) for t in m.tables]
    out.append(note_html(m.note))
    return "".join(out) + "</section>"


def render_html(report: Report) -> str:
    title = f"{report.name} — fslab report (study {report.study_id})"
    parts = [f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{escape(title)}</title>"
             f"<style>{CSS}</style></head><body>",
             f"<h1>{escape(report.name)}</h1>",
             f'<p class="meta">study {report.study_id} from {escape(report.source)} — {escape(report.status)}, '
             f"{report.runs_stored} of {report.runs_planned} runs stored, file systems: "
             f"{escape(', '.join(report.filesystems))}</p>"]
    if report.quick:
        parts.append('<p class="warn">QUICK run: sizes and runtimes scaled down — a smoke test, '
                     "not for conclusions.</p>")
    sig = [f for f in report.findings if f.significant]
    rest = [f for f in report.findings if not f.significant and f.decided]
    undecided = [f for f in report.findings if not f.decided]
    parts.append('<section id="summary"><h2>Summary</h2>')
    for warnings in (report.host_warnings, report.device_warnings):
        if warnings:
            head, *facts = warnings
            parts.append(f'<p class="warn">{escape(head)}</p>' + ('<ul class="hosts">' + "".join(
                f"<li>{escape(f)}</li>" for f in facts) + "</ul>" if facts else ""))
    parts.append(f"<p>{counted(len(sig), 'significant difference')}, {counted(len(rest), 'comparison')} without one, "
                 f"{len(undecided)} without a verdict (each file system against the best of its backend in its "
                 "row; guest and host columns are never compared).</p>")
    if sig:
        parts.append('<h3>Significant differences</h3><ul class="findings sig">'
                     + "".join(f"<li>{escape(f.text)}</li>" for f in sig) + "</ul>")
    if rest:
        parts.append('<h3>No significant difference</h3><ul class="findings nosig">'
                     + "".join(f"<li>{escape(f.text)}</li>" for f in rest) + "</ul>")
    if undecided:
        parts.append('<h3>No verdict</h3><ul class="findings noverdict">'
                     + "".join(f"<li>{escape(f.text)}</li>" for f in undecided) + "</ul>")
    parts.append(f'<p class="note">{escape(interval_note(sequential_p(report)))}</p></section>')

    columns, rows = summary_table(report)
    caveats = "".join(f'<p class="warn caveat">{escape(line)}</p>' for line in caveat_lines(report))
    parts.append('<section id="results"><h2>Results</h2>' + _table(columns, rows, 2) + caveats
                 + note_html(report.legend)
                 + "</section>")

    parts.append('<section id="charts"><h2>Charts</h2>'
                 f'<p>{legend_html(report.filesystems)}</p><p class="note">Bars: mean; whiskers: 95% '
                 "Student-t interval, or, where that would reach below zero for runs that are all positive "
                 "(few runs, much spread), the interval on the log scale (delta method), which stays above "
                 "zero; dots: each run. A hollow red circle marks an interval that still reaches below zero "
                 "(values that can be negative): it is drawn to the axis only, and "
                 "its lower end is in the bar's tooltip."
                 + (f" Bars of different backends ({escape(', '.join(report.rank_groups))}) stand side by side "
                    "to save space, not to be compared." if len(report.rank_groups) > 1 else "")
                 + "</p><div class=charts>")
    parts += [chart_svg(c, report.filesystems) for c in report.charts]
    parts.append("</div></section>")

    parts += [_model_section(m, report.filesystems) for m in report.sections]

    measured = [t for t in report.tables if t.kind != "prediction"]
    predicted = [t for t in report.tables if t.kind == "prediction"]
    if measured:
        parts.append('<section id="tables"><h2>Workload and trace tables</h2>'
                     + "".join(_section_table(t) for t in measured) + "</section>")
    parts.append(trace_plots_html(report))
    if predicted:
        parts.append('<section id="predictions" class="pred"><h2>Predictions on device models — not '
                     "measured</h2><p>Each run's block trace replayed on a model; these numbers are "
                     "a model's, not the device's.</p>" + "".join(_section_table(t) for t in predicted)
                     + "</section>")

    parts.append('<section id="failures"><h2>Failed and skipped runs</h2>')
    if report.failed:
        parts.append(_table(["file system", "workload", "repetition", "reason", "details", "run id"],
                            [[f.filesystem, f.workload, str(f.repetition), f.reason, f.details,
                              "—" if f.run_id is None else str(f.run_id)]
                             for f in report.failed], 99)
                     + '<p class="note"><code>fslab report --run ID</code> shows one run whole: its error, '
                     "parameters, artifacts and raw output.</p>")
    if report.skipped:
        parts.append("<ul>" + "".join(f"<li>skipped {escape(s['filesystem'])}: {escape(s['reason'])}</li>"
                                      for s in report.skipped) + "</ul>")
    if not report.failed and not report.skipped:
        parts.append("<p>None: every planned run of every file system succeeded.</p>")
    parts.append("</section>")

    parts.append('<section id="provenance"><h2>Provenance</h2>'
                 + _table(["fact", *report.provenance_columns], report.provenance, 99)
                 + '<p class="note">Values separated by | differ between runs of the same file system.</p>'
                 "</section></body></html>")
    return "\n".join(parts)


def render_compare_html(c: Comparison) -> str:
    """A compare (`fslab compare`) as one self-contained HTML file."""
    title = "fslab compare"
    parts = [f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{escape(title)}</title>"
             f"<style>{CSS}</style></head><body><h1>{escape(title)}</h1>",
             f'<p class="meta">comparing two {escape(c.mode)}: A = {escape(c.a)}, B = {escape(c.b)}; '
             f"{escape(variable_text(c))}</p>",
             '<section id="summary"><h2>Summary</h2><ul>'
             + "".join(f'<li class="warn">{escape(line)}</li>' for line in [left_out_line(c)] if line)
             + "".join(f"<li>{escape(line)}</li>" for line in summary_lines(c)) + "</ul></section>",
             '<section id="warnings"><h2>Other differences between A and B</h2>']
    warnings = warning_lines(c)
    if warnings:
        parts.append('<p class="warn">Besides the variable under test, these facts differ; any of them may '
                     "explain a difference as well:</p><ul>"
                     + "".join(f"<li>{escape(w)}</li>" for w in warnings) + "</ul>")
    elif c.not_compared:  # their definitions may differ: never say the two sides agree
        parts.append(f"<p>None among the {c.cases_compared} compared cases; {len(c.not_compared)} other cases "
                     "were left out (below).</p>")
    else:
        under_test = " except for the variable under test" if any(d.under_test for d in c.differences) else ""
        parts.append(f"<p>None: the provenance of both sides agrees{under_test}.</p>")
    under = [d for d in c.differences if d.under_test]
    if under:
        parts.append("<p>Under test: " + escape("; ".join(f"{d.fact}: A {d.a} / B {d.b}" for d in under)) + "</p>")
    left_out = not_compared_lines(c)
    parts.append('</section><section id="not-compared"><h2>Not compared</h2>'
                 + ('<p class="warn">Defined otherwise than by the variable under test, or on one side only; '
                    "their numbers are not set against each other:</p><ul>"
                    + "".join(f"<li>{escape(line)}</li>" for line in left_out) + "</ul>" if left_out
                    else "<p>None: every case of A and B was compared.</p>"))
    columns, rows = table_rows(c)
    parts.append('</section><section id="comparisons"><h2>Comparisons</h2>'
                 + (_table(columns, rows, 2, numeric_to=7) if rows else "<p>No case was compared.</p>")
                 + f'<p class="note">{escape(method_note(c))}</p></section></body></html>')
    return "\n".join(parts)
