"""fio groups that ran one after another (``stonewall`` in a job file): their figures.

A job file of several groups has no single throughput figure (fslab.workloads.fio leaves
the headline empty and stores ``group<N>_iops``, ``group<N>_bw_bytes_per_s`` and per
direction); this section shows each group's figures per file system, so such a study
still has numbers in every output. Groups are fio's ``groupid``s, named by the jobs in
them when the runs stored those."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...analysis.stats import summarize
from ...store import stored_metric_kind
from ...stored import STATUS_OK, StoredCell, StoredRun
from ..data import TableSection
from ..labels import cell_label, fs_column, mean_pm
from ..units import display_scale
from .base import SECTIONS, Section, StudyData

# A group's own figures (not per direction: the direction rows follow when several ran).
GROUP_METRIC = re.compile(r"^group(\d+)_((?:read_|write_|trim_)?(?:iops|bw_bytes_per_s))$")


def group_table(runs: Sequence[StoredRun], cells: Sequence[StoredCell]) -> TableSection | None:
    """Rows (case, group, metric), columns the file systems: mean ± 95% half-width (n)."""
    columns = list(dict.fromkeys(fs_column(c) for c in cells))
    values: dict[tuple[str, int, str], dict[str, list[float]]] = {}
    for run in runs:
        if run["status"] != STATUS_OK:
            continue
        for name, metric in run["metrics"].items():
            match = GROUP_METRIC.match(name)
            if match and metric["value"] is not None:
                key = (cell_label(run["cell"]), int(match.group(1)), match.group(2))
                values.setdefault(key, {}).setdefault(fs_column(run["cell"]), []).append(float(metric["value"]))
    if not values:
        return None
    # One direction in a group: its rows would repeat the group's totals.
    directions: dict[tuple[str, int], set[str]] = {}
    for case, group, short in values:
        prefix = short.split("_")[0]
        if prefix in ("read", "write", "trim"):
            directions.setdefault((case, group), set()).add(prefix)
    values = {k: v for k, v in values.items()
              if k[2].split("_")[0] not in ("read", "write", "trim") or len(directions.get(k[:2], ())) > 1}
    rows: list[list[str]] = []
    for (case, group, short), by_fs in sorted(values.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        name = f"group{group}_{short}"
        kind = stored_metric_kind(runs, name)
        summaries = {fs: summarize(v) for fs, v in by_fs.items()}
        divisor, unit = display_scale(kind.unit, max(abs(s.mean) for s in summaries.values()))
        rows.append([case, f"group {group}", f"{short} [{unit}] {'↑' if kind.higher_is_better else '↓'}",
                     *(mean_pm(summaries[fs], divisor) if fs in summaries else "—" for fs in columns)])
    return TableSection("workload", "fio groups run one after another (stonewall)",
                        ["workload", "group", "metric [unit]", *columns], rows,
                        note="Each group's throughput is fio's own group figure: the group's bytes (and I/Os) "
                        "over its longest job's runtime. Groups ran one after another, so no figure of the "
                        "whole run is given. Values: mean ± half-width of the 95% interval (Student t) over n "
                        "runs. Columns are not ranked here.")


def build(study: StudyData) -> list[TableSection]:
    table = group_table(study.runs, study.cells)
    return [] if table is None else [table]


SECTIONS.register("fio_groups", Section(build, order=10, workload_kind="fio"))
