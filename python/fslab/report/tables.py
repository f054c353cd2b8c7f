"""The comparison table: one row per workload cell, one column per file system, each
value a mean ± 95% interval over n runs, the best per row marked and every other value
given as a difference to it, with its significance (Welch's t, Holm-corrected per row)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..analysis.stats import MIN_N_FOR_VERDICT, Comparison, Summary, compare_groups, summarize
from ..store import stored_metric_kind
from ..stored import StoredCell, StoredRun
from .labels import cell_label, mean_pm
from .labels import fs_column as column


@dataclass
class RowData:
    label: str
    metric: str
    unit: str
    higher_is_better: bool
    values: dict[str, list[float]] = field(default_factory=dict)  # filesystem -> values
    failed: dict[str, int] = field(default_factory=dict)
    no_number: dict[str, list[str]] = field(default_factory=dict)  # filesystem -> notes
    summaries: dict[str, Summary] = field(default_factory=dict)
    best: str | None = None
    comparisons: dict[str, Comparison] = field(default_factory=dict)


@dataclass
class TableData:
    filesystems: list[str]
    rows: list[RowData]


def _row_metric(cell: StoredCell, requested: str | None) -> str:
    return requested or cell["primary_metric"]


def build_table(runs: Sequence[StoredRun], metric: str | None = None,
                cells: Sequence[StoredCell] | None = None) -> TableData:
    """Group stored runs into rows (cells without the file system) and columns."""
    filesystems: list[str] = []
    rows: dict[tuple[str, str], RowData] = {}
    ordered = cells if cells is not None else [r["cell"] for r in runs]
    for cell in ordered:
        if column(cell) not in filesystems:
            filesystems.append(column(cell))
        key = (cell["workload"], cell_label(cell))
        if key not in rows:
            name = _row_metric(cell, metric)
            kind = stored_metric_kind(runs, name)
            rows[key] = RowData(cell_label(cell), name, kind.unit, kind.higher_is_better)
    for run in runs:
        cell = run["cell"]
        row = rows[(cell["workload"], cell_label(cell))]
        fs = column(cell)
        if run["status"] != "ok":
            row.failed[fs] = row.failed.get(fs, 0) + 1
            continue
        m = run["metrics"].get(row.metric)
        if m is None:
            continue
        if m["value"] is None:
            row.no_number.setdefault(fs, []).append(m["note"] or "no number")
        else:
            row.values.setdefault(fs, []).append(float(m["value"]))
    for row in rows.values():
        row.summaries = {fs: summarize(v) for fs, v in row.values.items() if v}
        if row.summaries:
            pick = max if row.higher_is_better else min
            row.best = pick(row.summaries, key=lambda fs: row.summaries[fs].mean)
            row.comparisons = {c.a: c for c in compare_groups(row.values, row.best)}
    return TableData(filesystems, list(rows.values()))


def cell_text(row: RowData, fs: str, divisor: float) -> str:
    parts: list[str] = []
    summary = row.summaries.get(fs)
    if summary is not None:
        parts.append(mean_pm(summary, divisor))
        if fs != row.best and row.best is not None:
            best = row.summaries[row.best].mean
            if best:
                diff = (summary.mean - best) / best * 100
                comparison = row.comparisons.get(fs)
                mark = "*" if comparison and comparison.significant else ""
                if comparison is None or comparison.untested:
                    mark = NO_VERDICT
                parts.append(f"{diff:+.1f}%{mark}")
        elif fs == row.best and len(row.summaries) > 1:
            parts.append("best")
    if fs in row.no_number:
        parts.append(f"{len(row.no_number[fs])}x {row.no_number[fs][0]}")
    if fs in row.failed:
        parts.append(f"{row.failed[fs]} failed")
    return "  ".join(parts) if parts else "—"


NO_VERDICT = "†"
LEGEND = (
    "Metrics are named without their unit suffix (write_clat_p99 is write_clat_p99_ns), in the unit "
    "shown in brackets. ↑/↓: higher/lower is better. "
    "Values: mean ± half-width of the 95% confidence interval (Student t) over n runs. "
    "'best' marks the best mean in the row; other columns give their difference to it, "
    "* where it is significant (Welch's t-test, Holm-corrected within the row, α = 0.05).\n"
    f"{NO_VERDICT} no significance verdict: fewer than {MIN_N_FOR_VERDICT} runs in a group, or no spread "
    "in either group (zero variance), where a t-test cannot answer honestly."
)
