"""The block-trace size table of one workload: for each file system and op, the requests
the device completed, request sizes (min / median / mean / max, KiB) and the sequential
share, each a mean ± 95% interval (Student t) over the runs, with n; lossy traces marked
INCOMPLETE (an alert cell). An md array's rows count its md device's bios, and its
members' requests follow as rows marked '(members)'.

One builder for both sources of the table: the stored runs' trace metrics (the report's
trace tables) and the trace files read again (`fslab report --traces`, Table 1). Either
source gives each run's numbers under the names the store keeps them by
(analysis.traces.summary_metrics: ``trace_*``, an array's members ``trace_members_*``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..analysis.traces import MD_DEVICE, MEMBERS
from .data import TableSection
from .traced_runs import Loss, mean_ci

# A run's trace numbers: metric name -> value in its base unit (absent: no number).
RunNumbers = Mapping[str, float]

OPS = ("read", "write", "flush", "discard")
DATA_OPS = ("read", "write")
SIZE_STATS = ("min", "median", "mean", "max")
COMPLETE = "complete"
COLUMNS = ["file system", "op", "n runs", "requests", *(f"size {k} [KiB]" for k in SIZE_STATS),
           "sequential [%]", "trace"]


def numbers(runs: Iterable[RunNumbers], name: str, scale: float = 1.0) -> list[float]:
    """One metric over runs, scaled (runs without a number are skipped)."""
    return [float(run[name]) * scale for run in runs if name in run]


def _op_cells(runs: Sequence[RunNumbers], prefix: str, op: str) -> list[str]:
    n = len(runs)
    cells = [mean_ci(numbers(runs, f"{prefix}{op}_requests_count"), n)]
    if op not in DATA_OPS:
        return cells + ["—"] * (len(SIZE_STATS) + 1)
    cells += [mean_ci(numbers(runs, f"{prefix}{op}_size_{k}_bytes", 1 / 1024), n) for k in SIZE_STATS]
    return cells + [mean_ci(numbers(runs, f"{prefix}{op}_sequential_fraction", 100.0), n, upper=100.0)]


def size_table(title: str, by_fs: Mapping[str, Sequence[RunNumbers]],
               losses: Mapping[str, Loss | None]) -> TableSection:
    """One workload's table: ``by_fs`` file system -> its runs' numbers, ``losses`` file
    system -> its lossy traces (None: every trace complete). The note says what an md
    array's rows count; a caller may add its own lines above it."""
    table = TableSection("trace", title, list(COLUMNS), [])
    arrays = []
    for fs, runs in by_fs.items():
        n = len(runs)
        loss = losses.get(fs)
        sources = [("trace_", "")]
        if numbers(runs, "trace_members_write_requests_count"):
            sources.append(("trace_members_", " (members)"))
            arrays.append(fs)
        for i, (prefix, op, suffix) in enumerate((p, op, s) for p, s in sources for op in OPS):
            status = ""
            if i == 0:
                status = loss.text(n) if loss else COMPLETE
                if loss:
                    table.alerts.append((len(table.rows), len(COLUMNS) - 1))
            table.rows.append([fs if i == 0 else "", op + suffix, str(n), *_op_cells(runs, prefix, op), status])
    if arrays:
        table.note = (f"md arrays ({', '.join(arrays)}): read/write/... rows are {MD_DEVICE.text}, queued "
                      f"to it (block_bio_queue); '(members)' rows are {MEMBERS.text}, completed by them "
                      "(block_rq_*)")
    return table
