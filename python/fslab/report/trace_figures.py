"""Seed-004's trace figures for a stored study (``fslab report --traces DIR``), read from the
runs' ``trace.parquet`` artifacts — the store says which runs and where, nothing live:

- Table 1 (``table1_io_size.csv``, also printed): per workload, file system and op, the
  requests the device completed and the request size min / median / mean / max (KiB).
  Each is the statistic of one run's trace, then mean and 95% CI half-width (Student t)
  over the n runs (``*_ci95`` empty when n < 2). The printed table is the report's
  block-trace table (report.size_table: the sequential share too), from the trace files.
- Figure 3 (``fig3_io_counts_<workload>.png``): requests by op per file system (mean over runs).
- Figure 4 (``fig4_size_cdf_<op>_<workload>.png``): request-size CDF per file system,
  overlaid; the requests of all its runs pooled into one distribution.
- LBA over time (``lba_<workload>_<fs>.png``): one run per file system (the first stored).
Lossy traces are marked in the table (``incomplete_runs``, ``lost_events``) and the plots.
Table and figures count one stream (analysis.traces.Stream), named in each title and in the
CSV's ``stream`` column: a plain device's requests, an md array's md-device bios (what the
file system issued); so Figure 3's bars are Table 1's request counts.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..analysis.stats import summarize
from ..analysis.traces import Stream, analyze, summary_metrics
from ..stored import StoredCell, StoredRun
from ..trace.formats import NO_COMM, OP_READ, OP_WRITE, Trace
from . import trace_plots
from .data import TableSection
from .size_table import OPS, SIZE_STATS, RunNumbers, numbers, size_table
from .trace_files import FsTraces, Progress, trace_files
from .traced_runs import Loss, on_streams, repetition_text

CSV_NAME = "table1_io_size.csv"
DATA_OPS = {"read": OP_READ, "write": OP_WRITE}
CSV_COLUMNS = (["workload", "filesystem", "stream", "op", "n_runs", "requests", "requests_ci95"]
               + [f"size_{k}_kib{ci}" for k in SIZE_STATS for ci in ("", "_ci95")]
               + ["incomplete_runs", "lost_events"])


@dataclass
class TraceFigures:
    """What ``write_trace_figures`` produced."""

    paths: list[Path] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)  # the CSV rows
    tables: list[TableSection] = field(default_factory=list)  # Table 1, per workload
    missing: list[str] = field(default_factory=list)  # runs whose trace file is gone


def slug(text: str) -> str:
    """A file-name-safe form of a workload label or file-system name."""
    out = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)
    return out.strip("_") or "workload"


def pooled(traces: list[Trace]) -> Trace:
    """One trace holding the events of several runs (for distributions, not for time)."""
    cols = {k: np.concatenate([t.columns[k] for t in traces]) for k in traces[0].columns}
    cols["comm"] = np.full(len(cols["comm"]), NO_COMM, np.uint16)  # names differ per trace
    lost = [t.lost_events for t in traces]
    return Trace(cols, [], {"complete": all(t.complete for t in traces),
                            "lost_events": None if None in lost else sum(lost)})


def _stat(values: list[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    s = summarize(values)
    return s.mean, s.ci_half_width


def _loss(traces: list[Trace]) -> Loss | None:
    incomplete = [t for t in traces if not t.complete]
    return Loss(len(incomplete), sum(t.lost_events or 0 for t in incomplete)) if incomplete else None


def _rows(label: str, fs: str, stream: Stream, runs: Sequence[RunNumbers], loss: Loss | None) -> list[dict[str, Any]]:
    """The CSV rows of one file system: a row per op."""
    rows = []
    for op in OPS:
        row: dict[str, Any] = {"workload": label, "filesystem": fs, "stream": stream.key, "op": op,
                               "n_runs": len(runs), "incomplete_runs": loss.runs if loss else 0,
                               "lost_events": loss.events if loss else 0}
        row["requests"], row["requests_ci95"] = _stat(numbers(runs, f"trace_{op}_requests_count"))
        for k in SIZE_STATS:
            vals = numbers(runs, f"trace_{op}_size_{k}_bytes", 1 / 1024) if op in DATA_OPS else []
            row[f"size_{k}_kib"], row[f"size_{k}_kib_ci95"] = _stat(vals)
        rows.append(row)
    return rows


def _figures(label: str, by_fs: dict[str, FsTraces], numbers_of: Mapping[str, Sequence[RunNumbers]], on: str,
             out_dir: Path) -> list[Path]:
    """Figures 3 and 4 and the LBA plots of one workload."""
    name = slug(label)
    # Figure 3: the bars are means over runs; the label carries n (and the stream when
    # the file systems' differ: a plain device beside an array).
    mixed = len({t.stream for t in by_fs.values()}) > 1
    means = {f"{fs} (mean, n={len(rs)})" + (f" on {by_fs[fs].stream.short}" if mixed else ""):
             {"requests": {op: float(np.mean(numbers(rs, f"trace_{op}_requests_count"))) for op in OPS}}
             for fs, rs in numbers_of.items()}
    paths = [trace_plots.io_counts(means, out_dir / f"fig3_io_counts_{name}.png", on=on)]
    # Figure 4: one line per file system, every run's requests pooled.
    for op, code in DATA_OPS.items():
        if not any(v for rs in numbers_of.values() for v in numbers(rs, f"trace_{op}_requests_count")):
            continue
        merged = {f"{fs} (n={len(t.views)})": pooled(t.views) for fs, t in by_fs.items()}
        paths.append(trace_plots.size_cdf(merged, out_dir / f"fig4_size_cdf_{op}_{name}.png", op=code,
                                          title=f"{label}: {op} request sizes {on}"))
    for fs, t in by_fs.items():
        what = repetition_text(t.runs[t.first], t.stored, fs, label)
        paths.append(trace_plots.lba_over_time(t.views[t.first], out_dir / f"lba_{name}_{slug(fs)}.png",
                                               what, stream=t.stream))
    return paths


def write_trace_figures(results_dir: Path, runs: list[StoredRun], cells: list[StoredCell],
                        out_dir: Path, progress: Progress | None = None) -> TraceFigures:
    """Table 1 (CSV + table data), Figures 3 and 4 and LBA plots of a stored study into
    ``out_dir``; ``progress(done, total, what)`` after each trace file is read. Raises
    FslabError (from the trace reader) on an unreadable trace file."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = trace_files(results_dir, runs, cells)
    out = TraceFigures(missing=files.missing)
    for label, by_fs in files.read(progress):
        on = on_streams({fs: t.stream for fs, t in by_fs.items()})
        # Each run's numbers under the names the store keeps them by, as its trace file says.
        numbers_of = {fs: [summary_metrics(analyze(v)) for v in t.views] for fs, t in by_fs.items()}
        losses = {fs: _loss(t.views) for fs, t in by_fs.items()}
        out.rows += [row for fs, rs in numbers_of.items() for row in _rows(label, fs, by_fs[fs].stream, rs, losses[fs])]
        out.tables.append(size_table(f"Table 1 — I/O size {on}, {label}: per-run statistic, mean ± 95% CI "
                                     "(Student t) over n runs", numbers_of, losses))
        out.paths += _figures(label, by_fs, numbers_of, on, out_dir)
    csv_path = out_dir / CSV_NAME
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows({k: ("" if v is None else v) for k, v in row.items()} for row in out.rows)
    out.paths.insert(0, csv_path)
    return out
