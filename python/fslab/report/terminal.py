"""The report in the terminal (rich), drawn from the same model as HTML, Markdown and JSON:
title, comparison table and legend, workload and trace tables, predictions, skipped file
systems and failed runs grouped by reason. What to run next (resume, retry) stays with
the command that knows how it was called."""

from __future__ import annotations

import re
from typing import Any

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from .model import FailedRun, Report, SummaryRow, TableSection
from .summary import metric_text, row_cells

# A cell that is a number, an estimate or no value: such columns are right-aligned.
_NUMERIC = re.compile(r"^([-+]?[\d.,]+|—|\+{5})")


def summary_renderable(filesystems: list[str], rows: list[SummaryRow], title: str) -> Table:
    """The comparison table: a row per workload case and metric, a column per file system."""
    out = Table(title=title, title_justify="left")
    out.add_column("workload")
    out.add_column(escape("metric [unit]"))
    for fs in filesystems:
        out.add_column(escape(fs), justify="right")
    for row in rows:
        out.add_row(escape(row.label), escape(metric_text(row)), *[escape(c) for c in row_cells(row, filesystems)])
    return out


def _cell(text: str) -> Text:
    # A lossy trace must stand out, as it does in the HTML.
    return Text(text, style="bold red" if text.startswith("INCOMPLETE") else "")


def section_renderable(t: TableSection) -> Table:
    """A workload, trace or prediction table. Rows whose first column is empty continue the
    group above (a file system's ops), so a rule is drawn before each new group."""
    out = Table(title=escape(t.title), title_justify="left", caption=escape(t.note) if t.note else None,
                caption_justify="left")
    for i, name in enumerate(t.columns):
        values = [r[i] for r in t.rows if i < len(r) and r[i]]
        numeric = i > 0 and bool(values) and all(_NUMERIC.match(v) for v in values)
        out.add_column(escape(name), justify="right" if numeric else "left")
    grouped = any(not r[0] for r in t.rows)
    for k, row in enumerate(t.rows):
        last = k + 1 == len(t.rows) or (grouped and bool(t.rows[k + 1][0]))
        out.add_row(*[_cell(v) for v in row], end_section=grouped and last)
    return out


def failure_groups(failed: list[FailedRun]) -> list[tuple[str, list[FailedRun]]]:
    """Failed runs grouped by reason (device numbers left out), the most frequent first."""
    groups: dict[str, list[FailedRun]] = {}
    for f in failed:
        groups.setdefault(re.sub(r"/dev/loop\d+", "/dev/loopN", f.reason), []).append(f)
    return sorted(groups.items(), key=lambda item: -len(item[1]))


def failures_renderable(report: Report) -> Text | None:
    groups = failure_groups(report.failed)
    if not groups:
        return None
    out = Text()
    out.append(f"{len(report.failed)} of {report.runs_stored} stored runs failed", style="red")
    out.append(f", {'for one reason' if len(groups) == 1 else f'for {len(groups)} reasons'}:")
    for reason, group in groups:
        f = group[0]
        run = f" (run id {f.run_id}: `fslab report --run {f.run_id}`)" if f.run_id is not None else ""
        out.append(f"\n  {len(group)} x {reason}\n      e.g. {f.filesystem} {f.workload} #{f.repetition}{run}; "
                   f"details in {f.details or 'no artifacts stored'}")
    return out


def render_terminal(report: Report) -> list[Any]:
    """Every renderable of the report, in order (printed one after the other)."""
    title = f"study {report.study_id}: {report.name} — {report.status}"
    if report.quick:
        title += " — QUICK run (scaled down: a smoke test, not for conclusions)"
    out: list[Any] = [summary_renderable(report.filesystems, report.rows, escape(title)),
                      Text(report.legend, style="dim")]
    out += [section_renderable(t) for t in report.tables]  # each workload's predictions after its trace
    from .sections import rich_section  # a workload kind's own section (seed 003's figures)

    out += [rich_section(m) for m in report.sections]
    out += [Text(f"{s['filesystem']}: {s['reason']}", style="yellow") for s in report.skipped]
    failures = failures_renderable(report)
    if failures is not None:
        out.append(failures)
    return out
