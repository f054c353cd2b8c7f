"""What was run says what an aging fill measured (file data of the device, or statfs's
blocks in use; cells stored before fill_by existed aged by statfs) and both figures each
entry's runs started from, "not recorded" where an older run lacks one."""

from __future__ import annotations

from typing import Any

from fslab.report.aged_state import aged_state_table, aging_definition

AGING = {"fill": 0.5, "pattern": "random-holes", "seed": 3, "file_sizes": "lognormal:64KiB:1.5", "rounds": None}


def cell(fs: str, aging: dict[str, Any] | None) -> dict[str, Any]:
    return {"id": f"{fs}-c", "filesystem": fs, "workload": "alloc-aged", "aging": aging}


def run(fs: str, aging: dict[str, Any], **metrics: float) -> dict[str, Any]:
    stored = {k: {"value": v, "unit": "", "note": None, "higher_is_better": False} for k, v in metrics.items()}
    return {"cell": cell(fs, aging), "status": "ok", "metrics": stored}


def test_the_definition_says_what_the_fill_measured() -> None:
    assert aging_definition({**AGING, "fill_by": "data"}).startswith(
        "to 50% of the device's bytes as file data (fill_by = \"data\"")
    assert "blocks in use (fill_by = \"statfs\"" in aging_definition({**AGING, "fill_by": "statfs"})
    assert "as fslab aged before fill_by existed" in aging_definition(AGING)  # an older cell
    assert aging_definition(None).startswith("none")


def test_both_figures_per_entry_and_not_recorded_for_older_runs() -> None:
    data = {**AGING, "fill_by": "data"}
    runs = [run("ext4", data, aging_data_bytes=256 << 20, aging_data_fraction=0.5, aging_utilisation_fraction=0.532),
            run("ext4", data, aging_data_bytes=256 << 20, aging_data_fraction=0.5, aging_utilisation_fraction=0.534),
            run("xfs", data, aging_data_bytes=256 << 20, aging_data_fraction=0.5, aging_utilisation_fraction=0.645),
            run("old", AGING, aging_utilisation_fraction=0.5)]
    cells = [cell("ext4", data), cell("xfs", data), cell("old", AGING), cell("fresh", None)]
    table = aged_state_table("alloc-aged", cells, runs)  # type: ignore[arg-type]
    assert table is not None
    assert table.rows == [["ext4", "2", "256 MiB", "50.0%", "53.3% (53.2% to 53.4%)"],
                          ["xfs", "1", "256 MiB", "50.0%", "64.5%"],
                          ["old", "1", "not recorded", "not recorded", "50.0%"]]
    assert aged_state_table("alloc-aged", [cell("fresh", None)], []) is None  # nothing aged: no table
