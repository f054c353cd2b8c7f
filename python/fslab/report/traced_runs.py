"""Stored runs of traced studies, as the trace tables, the trace plots and `fslab report
--traces` read them: grouped by workload and file system, one metric's numbers over
runs, and which runs lost trace events. From the store only (``Store.runs``/``cells``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..analysis.stats import summarize
from ..stored import STATUS_OK, StoredCell, StoredRun
from .labels import cell_label, fs_column, mean_pm

# workload label -> file system (column) -> its runs
TracedRuns = dict[str, dict[str, list[StoredRun]]]


def _is_traced(run: StoredRun) -> bool:
    return run["status"] == STATUS_OK and "trace_write_requests_count" in run["metrics"]


def group_traced_runs(runs: Iterable[StoredRun], cells: Sequence[StoredCell],
                      keep: Callable[[StoredRun], bool] = _is_traced) -> TracedRuns:
    """workload label -> file system -> the runs ``keep`` accepts (traced, ok by default),
    in the cells' order; workloads and file systems without such runs are left out. The
    workload label is the comparison table's row label (``cell_label``)."""
    out: TracedRuns = {}
    for cell in cells:  # fixes the order: the study file's
        out.setdefault(cell_label(cell), {}).setdefault(fs_column(cell), [])
    for run in runs:
        if keep(run):
            out[cell_label(run["cell"])][fs_column(run["cell"])].append(run)
    return {w: {fs: rs for fs, rs in by_fs.items() if rs} for w, by_fs in out.items()
            if any(by_fs.values())}


def values(runs: Iterable[StoredRun], name: str, scale: float = 1.0) -> list[float]:
    """The stored numbers of one metric over runs (runs without a number are skipped)."""
    out = []
    for run in runs:
        m = run["metrics"].get(name)
        if m is not None and m["value"] is not None:
            out.append(float(m["value"]) * scale)
    return out


def mean_ci(vals: list[float], n_expected: int) -> str:
    """'mean ± half-width', with (n=k) when fewer than the row's n runs had a number."""
    if not vals:
        return "—"
    return mean_pm(summarize(vals), n_expected=n_expected)


@dataclass(frozen=True)
class Loss:
    runs: int  # runs whose trace is incomplete
    events: int  # events lost in them, summed

    def text(self, n: int) -> str:
        return f"INCOMPLETE: {self.events:,} events lost ({self.runs} of {n} runs)"


def trace_loss(runs: Sequence[StoredRun]) -> Loss | None:
    """Lossy traces among ``runs``: a trace metric carries the note when events were lost."""
    lossy = [r for r in runs if any(m["note"] and name.startswith("trace_")
                                    for name, m in r["metrics"].items())]
    if not lossy:
        return None
    return Loss(len(lossy), int(sum(values(lossy, "trace_lost_events_count"))))
