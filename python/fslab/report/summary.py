"""The comparison table as text, the one every renderer shows (terminal, HTML, Markdown):
a row per workload case and metric, a column per file system, each cell the estimate's
"mean ± half-width (n)", then 'best' or its difference to the best of its backend (* significant,
† no verdict), then what kept runs from giving a number (failed, no number), then the marks of
its caveats (‡1: the note under the table says what the runs measured instead)."""

from __future__ import annotations

from ..metrics import display_name
from .data import Report, SummaryRow
from .labels import TIED, caveat_line, difference_mark, is_tie
from .tables import MIN_N_TO_RANK


def row_cells(row: SummaryRow, filesystems: list[str]) -> list[str]:
    """One text per file-system column ('—' where it has nothing)."""
    by_fs = {e.filesystem: e for e in row.estimates}
    cells = []
    for fs in filesystems:
        parts: list[str] = []
        e = by_fs.get(fs)
        if e is not None:
            parts.append(e.text)
            best = row.bests.get(e.group)
            if best == fs or (best is not None and e.versus_best is not None and is_tie(e.mean, by_fs[best].mean)):
                # a tie (equal means to 0.1%) has no single best: each tied column says so
                tied = any(o is not e and o.group == e.group and o.n >= MIN_N_TO_RANK and is_tie(o.mean, e.mean)
                           for o in row.estimates)
                parts.append(TIED if tied else "best")
            elif e.versus_best is not None:
                v = e.versus_best
                parts.append(difference_mark(v.relative, v.significant, v.p_adjusted is not None))
        parts += row.fs_notes.get(fs, [])
        parts += row.caveats.get(fs, [])
        cells.append("  ".join(parts) or "—")
    return cells


def caveat_lines(report: Report) -> list[str]:
    """The notes under the comparison table that say what each caveat mark means."""
    return [caveat_line(c.mark, c.text, c.cells) for c in report.caveats]


def metric_text(row: SummaryRow) -> str:
    """'iops [IOPS] ↑': the metric without its unit suffix, the unit shown, the better direction
    ('·': none, a count that is not ranked)."""
    arrow = "·" if not row.ranked else "↑" if row.higher_is_better else "↓"
    return f"{display_name(row.metric)} [{row.display_unit}] {arrow}"


def sequential_p(report: Report) -> bool:
    """Whether the table's p values are an auto study's group-sequential test (report.stopping)."""
    return any(e.versus_best is not None and "group-sequential" in e.versus_best.method
               for row in report.rows for e in row.estimates)


def summary_table(report: Report) -> tuple[list[str], list[list[str]]]:
    """(columns, rows) of the comparison table."""
    columns = ["workload", "metric [unit]", *report.filesystems]
    return columns, [[row.label, metric_text(row), *row_cells(row, report.filesystems)] for row in report.rows]
