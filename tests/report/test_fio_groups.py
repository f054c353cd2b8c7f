"""fio groups that ran one after another: each group's figures per file system, where the
comparison table has no single figure."""

from __future__ import annotations

import math
from typing import Any

import pytest

from fslab.report.sections.fio_groups import group_table
from fslab.stored import StoredCell, StoredMetric, StoredRun


def cell(fs: str) -> StoredCell:
    return StoredCell(id=fs, filesystem=fs, fs_type=fs, mkfs=[], mount=[], workload="phases", workload_kind="fio",
                      params={}, axes={}, backend="host", memory_bytes=None, timeout_s=None, primary_metric="iops")


def run(fs: str, values: dict[str, float], status: str = "ok") -> StoredRun:
    metrics = {name: StoredMetric(value=v, unit="IOPS" if name.endswith("iops") else "B/s", note=None,
                                  higher_is_better=True) for name, v in values.items()}
    metrics["iops"] = StoredMetric(value=None, unit="IOPS", note="no single figure", higher_is_better=True)
    fields: dict[str, Any] = dict(run_id=0, cell=cell(fs), repetition=0, sequence=0, status=status, error=None,
                                  started_at=0.0, finished_at=0.0, provenance={}, metrics=metrics)
    return StoredRun(**fields)  # type: ignore[typeddict-item]


def test_each_group_gets_its_mean_interval_and_n_per_file_system() -> None:
    runs = [run("ext4", {"group0_iops": 100.0, "group0_write_iops": 100.0, "group1_iops": 10.0}),
            run("ext4", {"group0_iops": 120.0, "group0_write_iops": 120.0, "group1_iops": 30.0}),
            run("xfs", {"group0_iops": 200.0, "group0_write_iops": 200.0, "group1_iops": 40.0}),
            run("xfs", {"group0_iops": 999.0}, status="failed")]
    table = group_table(runs, [cell("ext4"), cell("xfs")])
    assert table is not None and table.columns == ["workload", "group", "metric [unit]", "ext4", "xfs"]
    rows = {(r[1], r[2]): r[3:] for r in table.rows}
    # One direction in a group repeats its totals: only the group's own rows; failed runs left out.
    assert set(rows) == {("group 0", "iops [IOPS] ↑"), ("group 1", "iops [IOPS] ↑")}
    # t(0.975, 1) x sd / sqrt(n) of 100 and 120 reaches below zero: the interval of these
    # positive values is taken on the log scale, mean ×/÷ exp(t x sd / (sqrt(n) x mean)).
    factor = math.exp(12.706 * (20 / 2**0.5) / (2**0.5 * 110))
    assert rows[("group 0", "iops [IOPS] ↑")][0] == f"110 ({110 / factor:.3g} to {110 * factor:.3g}, log scale) (n=2)"
    assert rows[("group 0", "iops [IOPS] ↑")][1] == "200 (n=1)"
    assert rows[("group 1", "iops [IOPS] ↑")][1] == "40.0 (n=1)"
    assert rows[("group 1", "iops [IOPS] ↑")][0].endswith(", log scale) (n=2)")


def test_a_study_without_groups_has_no_such_table() -> None:
    assert group_table([run("ext4", {"read_iops": 5.0})], [cell("ext4")]) is None


@pytest.mark.parametrize("name", ["group0_clat_p99_ns", "job0_w_iops"])
def test_only_group_throughput_is_tabulated(name: str) -> None:
    assert group_table([run("ext4", {name: 5.0})], [cell("ext4")]) is None
