"""The comparison table: one row per workload cell, one column per file system, each
value a mean ± 95% interval over n runs. Columns are ranked only against columns of their
own group — one backend and guest kernel (labels.rank_group): each group of a row has its
own best, every other value of the group is given as a difference to it, with its
significance (Welch's t, Holm-corrected within the row's group). A guest column is never
compared with a host column."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..analysis.stats import MIN_N_FOR_VERDICT, Comparison, Summary, compare_groups, summarize
from ..store import stored_metric_kind
from ..stored import STATUS_OK, StoredCell, StoredRun
from .labels import NO_VERDICT as NO_VERDICT  # re-exported: the table's mark, named where tables are
from .labels import TIED, cell_label, difference_mark, is_tie, mean_pm, rank_group
from .labels import fs_column as column

# A column needs this many runs to be ranked ("best", or a difference to the best): one run
# has no interval, so calling it best (or 3% behind) claims what it cannot show.
MIN_N_TO_RANK = 2


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
    group_of: dict[str, str] = field(default_factory=dict)  # column -> its rank group
    bests: dict[str, str] = field(default_factory=dict)  # rank group -> its best column (2+ columns)
    comparisons: dict[str, Comparison] = field(default_factory=dict)  # column -> against its group's best
    families: dict[str, int] = field(default_factory=dict)  # rank group -> comparisons in its Holm family
    ranked: bool = True  # False: the metric has no better direction (a count; metrics.MetricKind.ranked)

    def best_for(self, fs: str) -> str | None:
        """The best column of ``fs``'s group, which ``fs`` is compared with (None: alone in it)."""
        return self.bests.get(self.group_of.get(fs, ""))


@dataclass
class TableData:
    filesystems: list[str]
    rows: list[RowData]
    groups: dict[str, list[str]] = field(default_factory=dict)  # rank group -> its columns, table order


# The metric(s) a table shows: one name, several (`--metric A --metric B`: a row per case
# and metric, in the order given), or None for each cell's primary metric.
MetricChoice = str | Sequence[str] | None


def metric_names(metric: MetricChoice) -> tuple[str | None, ...]:
    """The names asked for, in order; (None,) for each cell's primary metric."""
    if metric is None:
        return (None,)
    names = (metric,) if isinstance(metric, str) else tuple(dict.fromkeys(metric))
    return names or (None,)


def _row_metric(cell: StoredCell, requested: str | None) -> str:
    return requested or cell["primary_metric"]


def build_table(runs: Sequence[StoredRun], metric: MetricChoice = None,
                cells: Sequence[StoredCell] | None = None) -> TableData:
    """Group stored runs into rows (cells without the file system, one per metric asked
    for) and columns."""
    filesystems: list[str] = []
    groups: dict[str, list[str]] = {}
    rows: dict[tuple[str, str, str | None], RowData] = {}
    names = metric_names(metric)
    ordered = cells if cells is not None else [r["cell"] for r in runs]

    def add_column(cell: StoredCell) -> None:
        if column(cell) not in filesystems:
            filesystems.append(column(cell))
            groups.setdefault(rank_group(cell), []).append(column(cell))

    for cell in ordered:
        add_column(cell)
        for requested in names:
            key = (cell["workload"], cell_label(cell), requested)
            if key not in rows:
                name = _row_metric(cell, requested)
                kind = stored_metric_kind(runs, name)
                rows[key] = RowData(cell_label(cell), name, kind.unit, kind.higher_is_better, ranked=kind.ranked)
    for run in runs:
        cell = run["cell"]
        add_column(cell)  # a run of a cell the list left out still has its column
        fs = column(cell)
        for requested in names:
            row = rows[(cell["workload"], cell_label(cell), requested)]
            if run["status"] != STATUS_OK:
                row.failed[fs] = row.failed.get(fs, 0) + 1
                continue
            m = run["metrics"].get(row.metric)
            if m is None:
                continue
            if m["value"] is None:
                row.no_number.setdefault(fs, []).append(m["note"] or "no number")
            else:
                row.values.setdefault(fs, []).append(float(m["value"]))
    group_of = {fs: name for name, columns in groups.items() for fs in columns}
    for row in rows.values():
        # In column order (not the runs' shuffled order): each group's best, the estimates and
        # the findings then read in the table's order.
        row.summaries = {fs: summarize(row.values[fs]) for fs in filesystems if row.values.get(fs)}
        row.group_of = {fs: group_of[fs] for fs in row.summaries}
        rank_within_groups(row)
    return TableData(filesystems, list(rows.values()), groups)


def rank_within_groups(row: RowData) -> None:
    """Each rank group's best column of the row and the comparisons with it (Welch's t,
    Holm within the group): a group is a family of its own, as it is a question of its own."""
    pick = max if row.higher_is_better else min
    members: dict[str, list[str]] = {}
    for fs in row.summaries:
        if row.summaries[fs].n >= MIN_N_TO_RANK:  # one run has no interval: its mean is not ranked
            members.setdefault(row.group_of[fs], []).append(fs)
    row.bests, row.comparisons, row.families = {}, {}, {}
    for name, columns in members.items():
        if not row.ranked or len(columns) < 2:  # unranked metric, or nothing to rank it against
            continue
        best = pick(columns, key=lambda fs: row.summaries[fs].mean)
        row.bests[name] = best
        found = compare_groups({fs: row.values[fs] for fs in columns}, best)
        row.comparisons.update({c.a: c for c in found})
        row.families[name] = sum(c.p_adjusted is not None for c in found)


def cell_text(row: RowData, fs: str, divisor: float) -> str:
    parts: list[str] = []
    summary = row.summaries.get(fs)
    best = row.best_for(fs)
    if summary is not None:
        parts.append(mean_pm(summary, divisor))
        if best is not None and fs != best:
            reference = row.summaries[best].mean
            comparison = row.comparisons.get(fs)
            if reference and comparison is not None and is_tie(summary.mean, reference):
                parts.append(TIED)  # +0.0% beside a 'best' would name one best of two equal means
            elif reference and comparison is not None:
                parts.append(difference_mark(summary.mean / reference - 1, comparison.significant,
                                             not comparison.untested))
        elif best is not None:
            parts.append(best_mark(row, fs))
    if fs in row.no_number:
        parts.append(f"{len(row.no_number[fs])}x {row.no_number[fs][0]}")
    if fs in row.failed:
        parts.append(f"{row.failed[fs]} failed")
    return "  ".join(parts) if parts else "—"


def best_mark(row: RowData, fs: str) -> str:
    """'best', or 'tied best' when another column of its group has the same mean to the
    table's precision (its difference would read +0.0%): a tie has no single best."""
    mean = row.summaries[fs].mean
    group = row.group_of.get(fs)
    tied = any(other != fs and row.group_of.get(other) == group and is_tie(s.mean, mean)
               for other, s in row.summaries.items() if s.n >= MIN_N_TO_RANK)
    return TIED if tied else "best"


LEGEND = (
    "Metrics are named without their unit suffix (write_clat_p99 is write_clat_p99_ns), in the unit "
    "shown in brackets. ↑/↓: higher/lower is better. "
    "Values: mean ± half-width of the 95% confidence interval (Student t) over n runs; where that "
    "interval of positive values would reach below zero, it is given as 'low to high, log scale' (the "
    "delta method on the log of the mean: it stays above zero). "
    "'best' marks the best mean of the row among the columns of one backend (and guest kernel) with at "
    f"least {MIN_N_TO_RANK} runs ('tied best' where columns share that mean to 0.1%); the "
    "other columns of that backend give their difference to it, (mean − best) / best in %, "
    "* where it is significant (Welch's t-test, Holm-corrected within the row's backend, α = 0.05). "
    "A column of one run, or a metric without a better direction (·, a count), is not ranked.\n"
    f"{NO_VERDICT} no significance verdict: fewer than {MIN_N_FOR_VERDICT} runs in a group, or no spread "
    "in either group (zero variance), where a t-test cannot answer honestly."
)
