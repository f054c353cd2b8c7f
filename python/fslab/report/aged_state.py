"""What aging asked for and the state it left, for "What was run": which measure a fill
used (``fill_by``: file data as a share of the device, the same on every file system, or
the blocks statfs counts as used, metadata and reservations included) and both figures
each entry reached, from the runs' stored metrics (fslab.aging)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..stored import STATUS_OK, StoredCell, StoredRun
from ..units import format_bytes
from .data import TableSection


def aging_definition(aging: Mapping[str, Any] | None) -> str:
    """The aging of a cell in words, saying what its fill measured."""
    if not aging:
        return "none (a fresh file system)"
    fill = float(aging["fill"])
    if aging.get("fill_by") == "data":
        what = (f"to {fill:.0%} of the device's bytes as file data (fill_by = \"data\": the same data "
                "on every file system)")
    else:  # stored before fill_by existed: fslab aged by statfs then
        by = "fill_by = \"statfs\"" if "fill_by" in aging else "by statfs, as fslab aged before fill_by existed"
        what = (f"to {fill:.0%} of the file system's blocks in use ({by}: metadata and reservations count "
                "as used, so file systems hold different data)")
    parts = [what, f"pattern {aging.get('pattern')}", f"seed {aging.get('seed')}",
             f"file sizes {aging.get('file_sizes')}"]
    if aging.get("rounds") is not None:
        parts.append(f"{aging['rounds']} rounds")
    return ", ".join(parts)


def _spread(values: list[float], text: Callable[[float], str]) -> str:
    low, high = min(values), max(values)
    mean = sum(values) / len(values)
    return text(mean) + ("" if low == high else f" ({text(low)} to {text(high)})")


def aged_state_table(workload: str, cells: Sequence[StoredCell], runs: Sequence[StoredRun]) -> TableSection | None:
    """Per entry of an aged workload: the file data its runs started with (bytes and share
    of the device) and the share of blocks statfs counted as used; None when not aged."""
    aged = {c["id"]: c for c in cells if c["workload"] == workload and c.get("aging")}
    if not aged:
        return None
    by_entry: dict[str, list[StoredRun]] = {}
    for run in runs:
        if run["cell"]["id"] in aged and run["status"] == STATUS_OK:
            by_entry.setdefault(run["cell"]["filesystem"], []).append(run)
    rows: list[list[str]] = []
    for entry, group in by_entry.items():
        def values(name: str, group: list[StoredRun] = group) -> list[float]:
            stored = [r["metrics"].get(name) for r in group]
            return [m["value"] for m in stored if m is not None and m["value"] is not None]

        data, share, used = (values("aging_data_bytes"), values("aging_data_fraction"),
                             values("aging_utilisation_fraction"))
        rows.append([entry, str(len(group)),
                     _spread(data, format_bytes) if data else "not recorded",
                     _spread(share, lambda v: f"{v:.1%}") if share else "not recorded",
                     _spread(used, lambda v: f"{v:.1%}") if used else "not recorded"])
    if not rows:
        return None
    return TableSection("workload", f"workload {workload}: the aged state its runs started from",
                        ["entry", "runs (n)", "file data", "file data, share of the device",
                         "blocks in use (statfs)"], rows,
                        note="mean over the runs (lowest to highest where they differ), as each run stored it; "
                        "file data is what the aged files hold, blocks in use what statfs counts, metadata and "
                        "reservations included (\"not recorded\": stored before fslab kept it)")
