"""The user's disks under one run's device (an array's named members, a disk handed to a
guest): the facts in which they differ (model, firmware, rotational, write cache, I/O
scheduler, size), so a report can warn that an array is only as fast as its slowest
member, and that its numbers describe that mix."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..stored import STATUS_OK, StoredRun

# Facts of the disk, not of its place (path, serial and backing file always differ).
COMPARED = ("model", "firmware", "rotational", "write_cache", "scheduler", "size_bytes",
            "logical_block_size", "physical_block_size")


def member_differences(disks: Sequence[dict[str, Any]]) -> list[tuple[str, dict[str, str]]]:
    """(fact, path -> value) for every compared fact whose value differs between ``disks``
    (provenance's ``device.host_disks``); empty for fewer than two."""
    if len(disks) < 2:
        return []
    out = []
    for fact in COMPARED:
        values = {str(d.get("path")): str(d.get(fact, "unknown")) for d in disks}
        if len(set(values.values())) > 1:
            out.append((fact, values))
    return out


def warning_lines(runs: Sequence[StoredRun]) -> list[str]:
    """A line saying the members differ, then one indented line per fact (the first set
    of members that differs among the successful runs; a study has one device)."""
    for run in runs:
        if run["status"] != STATUS_OK:
            continue
        disks = ((run.get("provenance") or {}).get("device") or {}).get("host_disks") or []
        diffs = member_differences(disks)
        if diffs:
            return ([f"the {len(disks)} disks under the device differ (an array runs at its slowest "
                     "member's pace; these numbers describe this mix):"]
                    + [f"  {fact}: " + "; ".join(f"{p} = {v}" for p, v in values.items())
                       for fact, values in diffs])
    return []
