"""Seed-004's trace figures for a stored study (``fslab report --traces DIR``), read from the
runs' ``trace.parquet`` artifacts — the store says which runs and where, nothing live:

- Table 1 (``table1_io_size.csv``, also printed): per workload, file system and op, the
  requests the device completed and the request size min / median / mean / max (KiB).
  Each is the statistic of one run's trace, then mean and 95% CI half-width (Student t)
  over the n runs (``*_ci95`` empty when n < 2).
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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..analysis.stats import summarize
from ..analysis.traces import Stream, analyze, shown
from ..stored import STATUS_OK, StoredCell, StoredRun
from ..trace.formats import NO_COMM, OP_READ, OP_WRITE, Trace, load_trace
from . import trace_plots
from .data import TableSection
from .traced_runs import group_traced_runs, on_streams, repetition_text, stored_runs_per_cell
from .units import fmt

CSV_NAME = "table1_io_size.csv"
OPS = ("read", "write", "flush", "discard")
DATA_OPS = {"read": OP_READ, "write": OP_WRITE}
SIZE_STATS = ("min", "median", "mean", "max")
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


def trace_path(results_dir: Path, run: StoredRun) -> Path | None:
    """Where a stored run's trace is (None when the run was not captured)."""
    info = run["provenance"].get("trace") or {}
    if not info.get("captured") or not run["artifact_dir"]:
        return None
    return results_dir / run["artifact_dir"] / str(info.get("artifact", "trace.parquet"))


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


def _rows(label: str, fs: str, stream: Stream, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    n = len(results)
    incomplete = [r for r in results if not r["complete"]]
    lost = sum(r["lost_events"] or 0 for r in incomplete)
    rows = []
    for op in OPS:
        row: dict[str, Any] = {"workload": label, "filesystem": fs, "stream": stream.key, "op": op, "n_runs": n,
                               "incomplete_runs": len(incomplete), "lost_events": lost}
        row["requests"], row["requests_ci95"] = _stat([r["requests"][op] for r in results])
        for k in SIZE_STATS:
            vals = ([r["size_bytes"][op][k] / 1024 for r in results if r["size_bytes"][op]["count"]]
                    if op in DATA_OPS else [])
            row[f"size_{k}_kib"], row[f"size_{k}_kib_ci95"] = _stat(vals)
        rows.append(row)
    return rows


def _table(label: str, rows: list[dict[str, Any]], on: str) -> TableSection:
    """Table 1 of one workload; ``on`` names the stream(s) its rows count."""
    def cell(row: dict[str, Any], key: str) -> str:
        if row[key] is None:
            return "—"
        hw = row[f"{key}_ci95"]
        return fmt(row[key]) + (f" ± {fmt(hw)}" if hw is not None else "")

    columns = ["file system", "op", "n runs", "requests", "mean [KiB]", "min [KiB]", "median [KiB]", "max [KiB]",
               "trace"]
    table = TableSection("trace", f"Table 1 — I/O size {on}, {label}: per-run statistic, "
                         "mean ± 95% CI (Student t) over n runs", columns, [])
    for row in rows:
        if row["op"] not in DATA_OPS or not row["requests"]:
            continue
        lossy = row["incomplete_runs"]
        if lossy:
            table.alerts.append((len(table.rows), len(columns) - 1))
        table.rows.append([row["filesystem"], row["op"], str(row["n_runs"]), cell(row, "requests"),
                           *(cell(row, f"size_{k}_kib") for k in ("mean", "min", "median", "max")),
                           f"INCOMPLETE: {row['lost_events']:,} events lost ({lossy} of {row['n_runs']} runs)"
                           if lossy else "complete"])
    return table


def write_trace_figures(results_dir: Path, runs: list[StoredRun], cells: list[StoredCell],
                        out_dir: Path, progress: Callable[[int, int, str], None] | None = None) -> TraceFigures:
    """Table 1 (CSV + table data), Figures 3 and 4 and LBA plots of a stored study into
    ``out_dir``; ``progress(done, total, what)`` after each trace file is read. Raises
    FslabError (from the trace reader) on an unreadable trace file."""
    out = TraceFigures()
    out_dir.mkdir(parents=True, exist_ok=True)

    def captured(run: StoredRun) -> bool:
        path = trace_path(results_dir, run)
        if run["status"] != STATUS_OK or path is None:
            return False
        if not path.is_file():
            out.missing.append(str(path))
            return False
        return True

    groups = group_traced_runs(runs, cells, keep=captured)
    stored = stored_runs_per_cell(runs)
    total = sum(len(rs) for by_fs in groups.values() for rs in by_fs.values())
    done = 0

    def read(run: StoredRun, what: str) -> Trace:
        nonlocal done
        trace = load_trace(trace_path(results_dir, run))  # type: ignore[arg-type]
        done += 1
        if progress is not None:
            progress(done, total, what)
        return trace

    for label, by_fs in groups.items():
        name = slug(label)
        # Each run's trace as the stream shown (its file system's runs share a device kind).
        views = {fs: [shown(read(r, f"{label} {fs}")) for r in rs] for fs, rs in by_fs.items()}
        shows = {fs: vs[0][0] for fs, vs in views.items()}
        traces = {fs: [view for _, view in vs] for fs, vs in views.items()}
        on = on_streams(shows)
        results = {fs: [analyze(t) for t in ts] for fs, ts in traces.items()}
        rows = [row for fs, rs in results.items() for row in _rows(label, fs, shows[fs], rs)]
        out.rows += rows
        out.tables.append(_table(label, rows, on))
        # Figure 3: the bars are means over runs; the label carries n (and the stream when
        # the file systems' differ: a plain device beside an array).
        mixed = len(set(shows.values())) > 1
        means = {f"{fs} (mean, n={len(rs)})" + (f" on {shows[fs].short}" if mixed else ""):
                 {"requests": {op: float(np.mean([r["requests"][op] for r in rs])) for op in OPS}}
                 for fs, rs in results.items()}
        out.paths.append(trace_plots.io_counts(means, out_dir / f"fig3_io_counts_{name}.png", on=on))
        # Figure 4: one line per file system, every run's requests pooled.
        for op, code in DATA_OPS.items():
            if not any(r["requests"][op] for rs in results.values() for r in rs):
                continue
            merged = {f"{fs} (n={len(ts)})": pooled(ts) for fs, ts in traces.items()}
            cdf_path = out_dir / f"fig4_size_cdf_{op}_{name}.png"
            out.paths.append(trace_plots.size_cdf(merged, cdf_path, op=code,
                                                  title=f"{label}: {op} request sizes {on}"))
        for fs, rs in by_fs.items():
            first = min(range(len(rs)), key=lambda i: rs[i]["repetition"])
            what = repetition_text(rs[first], stored[(label, fs)], fs, label)
            out.paths.append(trace_plots.lba_over_time(traces[fs][first], out_dir / f"lba_{name}_{slug(fs)}.png",
                                                       what, stream=shows[fs]))
    csv_path = out_dir / CSV_NAME
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows({k: ("" if v is None else v) for k, v in row.items()} for row in out.rows)
    out.paths.insert(0, csv_path)
    return out
