"""The traced runs' trace files (``trace.parquet`` artifacts), read for every output drawn
from them — the report's trace plots and `fslab report --traces`: which ok runs have one,
which files are gone, and each run's trace as the stream shown (analysis.traces.shown),
one workload at a time so only one workload's traces are in memory at once."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..analysis.traces import Stream, shown
from ..stored import STATUS_OK, StoredCell, StoredRun
from ..trace.formats import Trace, load_trace
from .traced_runs import TracedRuns, group_traced_runs, stored_runs_per_cell

# (done, total, what) after each trace file is read: lets a command show progress and ETA.
Progress = Callable[[int, int, str], None]


def trace_path(results_dir: Path, run: StoredRun) -> Path | None:
    """Where a stored run's trace is (None when the run was not captured)."""
    info = run["provenance"].get("trace") or {}
    if not info.get("captured") or not run["artifact_dir"]:
        return None
    return results_dir / run["artifact_dir"] / str(info.get("artifact", "trace.parquet"))


@dataclass(frozen=True)
class FsTraces:
    """One file system's traced runs of a workload, each run's trace as the stream shown."""

    runs: list[StoredRun]
    views: list[Trace]  # runs[i]'s trace, as ``stream``
    stream: Stream  # a file system's runs share a device kind, hence a stream
    stored: int  # runs of this cell the store holds, whatever their status or trace

    @property
    def first(self) -> int:
        """The index of the first stored repetition (the one drawn over time)."""
        return min(range(len(self.runs)), key=lambda i: self.runs[i]["repetition"])


@dataclass
class TraceFiles:
    """The trace files of a stored study: grouped by workload label and file system (the
    cells' order), and the files that were missing (their runs left out)."""

    results_dir: Path
    groups: TracedRuns
    stored: dict[tuple[str, str], int]
    missing: list[str] = field(default_factory=list)

    def read(self, progress: Progress | None = None) -> Iterator[tuple[str, dict[str, FsTraces]]]:
        """(workload label, file system -> its traces), one workload at a time;
        ``progress(done, total, what)`` after each file. Raises FslabError (from the trace
        reader) on an unreadable trace file."""
        total = sum(len(rs) for by_fs in self.groups.values() for rs in by_fs.values())
        done = 0
        for label, by_fs in self.groups.items():
            out: dict[str, FsTraces] = {}
            for fs, runs in by_fs.items():
                streams, views = [], []
                for run in runs:
                    stream, view = shown(load_trace(trace_path(self.results_dir, run)))  # type: ignore[arg-type]
                    streams.append(stream)
                    views.append(view)
                    done += 1
                    if progress is not None:
                        progress(done, total, f"{label} {fs}")
                out[fs] = FsTraces(runs, views, streams[0], self.stored[(label, fs)])
            yield label, out


def trace_files(results_dir: Path, runs: list[StoredRun], cells: list[StoredCell]) -> TraceFiles:
    """The ok runs whose trace was captured and whose file is still there; a captured run
    whose file is gone is named in ``missing``."""
    missing: list[str] = []

    def captured(run: StoredRun) -> bool:
        path = trace_path(results_dir, run)
        if run["status"] != STATUS_OK or path is None:
            return False
        if not path.is_file():
            missing.append(str(path))
            return False
        return True

    groups = group_traced_runs(runs, cells, keep=captured)
    return TraceFiles(results_dir, groups, stored_runs_per_cell(runs), missing)
