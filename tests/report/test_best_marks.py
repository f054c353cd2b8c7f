"""'best' is a claim: a column of one run (no interval) is never marked best nor given a
difference to the best, and columns whose means are equal to the table's precision are
each 'tied best', never one 'best' beside a '+0.0%'."""

from __future__ import annotations

from fslab.analysis.stats import summarize
from fslab.report.model import rows_from_table
from fslab.report.summary import row_cells
from fslab.report.tables import RowData, TableData, cell_text, rank_within_groups


def _row(values: dict[str, list[float]], higher_is_better: bool = True) -> RowData:
    row = RowData("rand4k", "iops", "IOPS", higher_is_better, values=values)
    row.summaries = {fs: summarize(v) for fs, v in values.items()}
    row.group_of = {fs: "host" for fs in values}
    rank_within_groups(row)
    return row


def _cells(row: RowData) -> list[str]:
    columns = list(row.values)
    return row_cells(rows_from_table(TableData(columns, [row], {"host": columns}))[0], columns)


def test_a_column_of_one_run_is_not_ranked() -> None:
    # xfs's one run is the highest mean: before, it was 'best' and ext4 '-20.0%'.
    row = _row({"ext4": [100.0, 102.0, 98.0], "xfs": [125.0]})
    assert row.bests == {}
    ext4, xfs = _cells(row)
    assert "best" not in ext4 + xfs and "%" not in ext4 + xfs
    assert xfs == "125 (n=1)"
    assert "best" not in cell_text(row, "xfs", 1.0)


def test_one_run_leaves_the_others_ranked() -> None:
    row = _row({"ext4": [100.0, 102.0, 98.0], "xfs": [125.0], "btrfs": [80.0, 82.0, 81.0]})
    assert row.bests == {"host": "ext4"}
    ext4, xfs, btrfs = _cells(row)
    assert ext4.endswith("best") and btrfs.endswith("-19.0%*") and xfs == "125 (n=1)"


def test_tied_columns_are_each_tied_best_and_show_no_zero_difference() -> None:
    row = _row({"ext4": [100.0, 101.0, 99.0], "xfs": [99.0, 100.0, 101.0], "btrfs": [50.0, 51.0, 49.0]})
    ext4, xfs, btrfs = _cells(row)
    assert ext4.endswith("tied best") and xfs.endswith("tied best"), (ext4, xfs)
    assert "+0.0%" not in ext4 + xfs and "-0.0%" not in ext4 + xfs
    assert btrfs.endswith("-50.0%*")
    assert cell_text(row, "ext4", 1.0).endswith("tied best") and cell_text(row, "xfs", 1.0).endswith("tied best")


def test_a_near_but_visible_difference_is_not_a_tie() -> None:
    row = _row({"ext4": [100.0, 101.0, 99.0], "xfs": [99.8, 100.8, 98.8]})
    ext4, xfs = _cells(row)
    assert ext4.endswith("  best") and xfs.endswith("-0.2%")


def test_a_count_is_shown_but_never_ranked() -> None:
    """A device's flush count on a time-based run grows with the work done: the file system
    that did less would be 'best'. Counts have no better direction (·), old stored records
    included (they stored 'lower is better')."""
    from fslab.metrics import is_ranked
    from fslab.report.summary import metric_text
    from fslab.store import stored_metric_kind

    assert not is_ranked("device_flush_requests_count") and not is_ranked("device_write_sectors_count")
    assert is_ranked("iops") and is_ranked("write_clat_p99_ns")
    old_record = {"value": 3435.0, "unit": "requests", "note": None, "higher_is_better": False}
    kind = stored_metric_kind([{"metrics": {"device_flush_requests_count": old_record}}],  # type: ignore[list-item]
                              "device_flush_requests_count")
    assert not kind.ranked
    values = {"ext4": [3435.0, 3300.0, 3500.0], "xfs": [4328.0, 4400.0, 4250.0]}
    row = RowData("rand4k", "device_flush_requests_count", "requests", False, values=values, ranked=False)
    row.summaries = {fs: summarize(v) for fs, v in values.items()}
    row.group_of = {fs: "host" for fs in values}
    rank_within_groups(row)
    assert row.bests == {} and row.comparisons == {}
    [summary] = rows_from_table(TableData(list(values), [row], {"host": list(values)}))
    assert all("best" not in c and "%" not in c for c in row_cells(summary, list(values)))
    assert metric_text(summary).endswith("[requests] ·")
