"""The report in the terminal (rich), drawn from the same data as HTML, Markdown and JSON:
title, comparison table and legend, workload and trace tables, predictions, the sections
of workload kinds, skipped file systems and failed runs grouped by reason, and (several
hosts) the table per host and what the hosts differ in. What to run next (resume, retry)
stays with the command that knows how it was called. Nothing here is read back: rich
objects are only printed."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..stored import StoredCell
from ..units import counted
from .data import FailedRun, ModelSection, Report, SummaryRow, TableSection
from .model import rows_from_table
from .summary import caveat_lines, metric_text, row_cells
from .tables import TableData

# A cell that is a number, an estimate or no value: such columns are right-aligned.
_NUMERIC = re.compile(r"^([-+]?[\d.,]+|—|\+{5})")
ALERT_STYLE = "bold red"  # a cell a reader must not miss (a lossy trace)


def summary_renderable(filesystems: list[str], rows: list[SummaryRow], title: str) -> Table:
    """The comparison table: a row per workload case and metric, a column per file system.
    ``title`` is rich markup (escape plain text)."""
    out = Table(title=title, title_justify="left")
    out.add_column("workload")
    out.add_column(escape("metric [unit]"))
    for fs in filesystems:
        out.add_column(escape(fs), justify="right")
    for row in rows:
        out.add_row(escape(row.label), escape(metric_text(row)), *[escape(c) for c in row_cells(row, filesystems)])
    return out


def render_table(table: TableData, title: str, cells: list[StoredCell] | None = None) -> Table:
    """A comparison table (report.tables) drawn as the report draws it."""
    return summary_renderable(table.filesystems, rows_from_table(table, cells), title)


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
    alerts = set(t.alerts)
    for k, row in enumerate(t.rows):
        last = k + 1 == len(t.rows) or (grouped and bool(t.rows[k + 1][0]))
        out.add_row(*[Text(v, style=ALERT_STYLE if (k, j) in alerts else "") for j, v in enumerate(row)],
                    end_section=grouped and last)
    return out


def model_section_renderable(m: ModelSection) -> Group:
    """A section of its own: its statements and tables; its charts are drawn by
    `fslab report --html` (their numbers are in --markdown and --json)."""
    parts: list[RenderableType] = [Text(m.title, style="bold"), Text(m.intro, style="dim")]
    parts += [Text(f"• {s}") for s in m.statements]
    parts += [section_renderable(t) for t in m.tables]
    if m.charts:
        parts.append(Text(f"{counted(len(m.charts), 'chart')}: fslab report --html FILE", style="dim"))
    return Group(*parts)


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
        run = f" (run id {f.run_id}: `{f.command}`)" if f.run_id is not None else ""
        out.append(f"\n  {len(group)} x {reason}\n      e.g. {f.filesystem} {f.workload} #{f.repetition}{run}; "
                   f"details in {f.details or 'no artifacts stored'}")
    return out


def render_terminal(report: Report) -> list[RenderableType]:
    """Every renderable of the report, in order (printed one after the other)."""
    title = f"study {report.study_id}: {report.name} — {report.status}"
    if report.quick:
        title += " — QUICK run (scaled down: a smoke test, not for conclusions)"
    out: list[RenderableType] = [summary_renderable(report.filesystems, report.rows, escape(title))]
    out += [Text(line, style="yellow") for line in caveat_lines(report)]  # under the table, before the legend
    # Each difference of the table with its 95% interval (the cells show only the difference).
    out += [Text(f"• {f.text}", style="" if f.significant else "dim") for f in report.findings]
    out.append(Text(report.legend, style="dim"))
    out += [section_renderable(t) for t in report.tables]  # each workload's predictions after its trace
    out += [model_section_renderable(m) for m in report.sections]
    out += [Text(f"{s['filesystem']}: {s['reason']}", style="yellow") for s in report.skipped]
    failures = failures_renderable(report)
    if failures is not None:
        out.append(failures)
    return out


def host_renderables(report: Report, per_host: Sequence[tuple[str, Report]] = ()) -> list[RenderableType]:
    """Runs from several machines: the comparison table once per host (``per_host``, from
    report.outputs.reports_by_host), then the warning about pooling them (nothing for a
    one-host study)."""
    out: list[RenderableType] = []
    for host, mine in per_host:  # each with its own caveat notes: its marks are numbered in its table
        out.append(summary_renderable(mine.filesystems, mine.rows, escape(f"study {report.study_id}: host {host}")))
        out += [Text(line, style="yellow") for line in caveat_lines(mine)]
    if report.host_warnings:  # the first line names the hosts, the others the facts they differ in
        head, *facts = report.host_warnings
        out += [Text(line, style="yellow") for line in [head, *[f"  {fact}" for fact in facts]]]
    if report.device_warnings:  # likewise: the disks under the device
        head, *facts = report.device_warnings
        out += [Text(line, style="yellow") for line in [head, *[f"  {fact}" for fact in facts]]]
    return out
