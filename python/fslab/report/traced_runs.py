"""Stored runs of traced studies, as the trace tables, the trace plots and `fslab report
--traces` read them: grouped by workload and file system, one metric's numbers over
runs, which runs lost trace events, and the words that name the stream (analysis.traces.
Stream) each table and figure counts. From the store only (``Store.runs``/``cells``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..analysis.stats import summarize
from ..analysis.traces import DEVICE, MD_DEVICE, Stream
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


def stored_runs_per_cell(runs: Iterable[StoredRun]) -> dict[tuple[str, str], int]:
    """(workload label, file system) -> how many runs of that cell the store holds, whatever
    their status or trace: the "of N" of "repetition k of N"."""
    out: dict[tuple[str, str], int] = {}
    for run in runs:
        key = (cell_label(run["cell"]), fs_column(run["cell"]))
        out[key] = out.get(key, 0) + 1
    return out


def repetition_text(run: StoredRun, stored: int, fs: str, label: str) -> str:
    """'repetition 2 of 5 of ext4 rand4k': the run's place among its cell's ``stored`` runs.
    A run is one of them, so the count is never below its repetition number (a store that
    holds only some repetitions still reads 'k of k', never 'k of fewer')."""
    k = run["repetition"] + 1
    return f"repetition {k} of {max(stored, k)} of {fs} {label}"


def stored_stream(runs: Sequence[StoredRun]) -> Stream:
    """The stream a file system's ``trace_*`` metrics count: an md array's (it stored its
    members' as ``trace_members_*`` beside them) is its md device's bios."""
    return MD_DEVICE if values(runs, "trace_members_write_requests_count") else DEVICE


def on_streams(by_fs: dict[str, Stream]) -> str:
    """'on the device' when every file system's numbers come from one stream, else each
    stream with its file systems: 'on the device (ext4, f2fs); on the md device (…)
    (ext4-raid0)'."""
    groups: dict[Stream, list[str]] = {}
    for fs, stream in by_fs.items():
        groups.setdefault(stream, []).append(fs)
    if len(groups) == 1:
        return f"on {next(iter(groups)).text}"
    return "; ".join(f"on {stream.text} ({', '.join(names)})" for stream, names in groups.items())


def values(runs: Iterable[StoredRun], name: str, scale: float = 1.0) -> list[float]:
    """The stored numbers of one metric over runs (runs without a number are skipped)."""
    out = []
    for run in runs:
        m = run["metrics"].get(name)
        if m is not None and m["value"] is not None:
            out.append(float(m["value"]) * scale)
    return out


def stored_numbers(run: StoredRun) -> dict[str, float]:
    """A run's stored metrics that have a number: name -> value in its base unit."""
    return {name: float(m["value"]) for name, m in run["metrics"].items() if m["value"] is not None}


def mean_ci(vals: list[float], n_expected: int, upper: float | None = None) -> str:
    """'mean ± half-width', with (n=k) when fewer than the row's n runs had a number;
    ``upper``: a share from 0 to upper, whose interval stays inside (stats.summarize)."""
    if not vals:
        return "—"
    return mean_pm(summarize(vals, upper=upper), n_expected=n_expected)


@dataclass(frozen=True)
class Loss:
    runs: int  # runs whose trace is incomplete
    events: int  # events lost in them, summed

    def text(self, n: int) -> str:
        return f"INCOMPLETE: {self.events:,} events lost ({self.runs} of {n} runs)"


def inexact_cuts(runs: Sequence[StoredRun]) -> int:
    """How many of ``runs`` had a trace cut where the device was not idle (at its start or
    its stop, within the capture's wait for an idle moment): their trace counts may differ
    from the device counters by the requests in flight there. Runs stored before fslab cut
    at idle moments have no window and are not counted."""
    windows = [(r["provenance"].get("trace") or {}).get("window") or {} for r in runs]
    return sum(1 for w in windows if w.get("counters_exact") is False)


def trace_loss(runs: Sequence[StoredRun]) -> Loss | None:
    """Lossy traces among ``runs``: a trace metric carries the note when events were lost."""
    lossy = [r for r in runs if any(m["note"] and name.startswith("trace_")
                                    for name, m in r["metrics"].items())]
    if not lossy:
        return None
    return Loss(len(lossy), int(sum(values(lossy, "trace_lost_events_count"))))
