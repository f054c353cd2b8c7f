"""Trace plots for the report (HTML inline, Markdown beside it, JSON as data), read from the
stored runs' ``trace.parquet`` artifacts — the store says which runs and where:

- a request-size CDF per workload and op (read, write), one line per file system with the
  requests of all its runs pooled; the data kept is each line's percentiles;
- LBA over time per workload and file system, of the first stored repetition; the data
  kept is its time span, offset range and requests per op and per tenth of the time.
Both count data requests as issued (analysis.traces: sizes are taken in issue order), which
may differ by the few still in flight from the completed requests the trace tables count.
Both show the stream the trace tables show (analysis.traces.Stream): a plain device's
requests, an md array's md-device bios (what the file system issued, not what its member
disks were asked), named in every caption and in the data (``streams``).

Each plot names the runs it comes from; a lossy trace is marked INCOMPLETE with its lost
events. Images are PNG (matplotlib, as ``fslab report --traces`` draws them), made only
when a renderer needs them: JSON carries the numbers, not pictures."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..analysis.traces import Stream, data_requests
from ..stored import StoredCell, StoredRun
from ..trace.formats import OP_READ, OP_WRITE, SECTOR_BYTES, Trace
from . import trace_plots
from .data import TracePlot
from .trace_figures import pooled, slug
from .trace_files import Progress, trace_files
from .traced_runs import on_streams, repetition_text

PERCENTILES = (0, 10, 25, 50, 75, 90, 99, 100)
TIME_BINS = 10
DATA_OPS = {"read": OP_READ, "write": OP_WRITE}


def _run_label(run: StoredRun) -> str:
    return f"#{run['repetition'] + 1} (run id {run['run_id']})"


def _loss(traces: list[Trace]) -> tuple[bool, int | None]:
    lost = [t.lost_events for t in traces if not t.complete]
    complete = all(t.complete for t in traces)
    if complete:
        return True, 0
    return False, None if None in lost else int(sum(x or 0 for x in lost))


def _loss_text(complete: bool, lost: int | None) -> str:
    if complete:
        return "Trace complete"
    return f"INCOMPLETE trace: {'an unknown number of' if lost is None else f'{lost:,}'} events lost"


def _sizes_kib(trace: Trace, op: int) -> np.ndarray:
    m = data_requests(trace) & (trace.columns["op"] == op)
    sizes: np.ndarray = trace.columns["nr_sector"][m].astype(np.float64) * SECTOR_BYTES / 1024
    return sizes


def _png(draw: Callable[[io.BytesIO], Any]) -> bytes:
    buf = io.BytesIO()
    draw(buf)
    return buf.getvalue()


def _size_cdf(label: str, op: str, traces: dict[str, list[Trace]], runs: dict[str, list[StoredRun]],
              shows: dict[str, Stream], images: bool) -> TracePlot | None:
    """One op's size CDF of a workload; ``traces`` are the views of the streams ``shows``
    names per file system."""
    lines: dict[str, Any] = {}
    for fs, ts in traces.items():
        sizes = np.concatenate([_sizes_kib(t, DATA_OPS[op]) for t in ts])
        if len(sizes):
            # fslab's one percentile definition: nearest rank, 0-100 scale (as analysis.traces).
            pct = np.percentile(sizes, PERCENTILES, method="inverted_cdf")
            lines[fs] = {"runs": len(ts), "data_requests_issued": int(len(sizes)),
                         "percentiles_kib": {f"p{p:g}": float(v) for p, v in zip(PERCENTILES, pct)}}
    if not lines:
        return None
    everything = [t for ts in traces.values() for t in ts]
    complete, lost = _loss(everything)
    used = {fs: rs for fs, rs in runs.items() if fs in lines}
    on = on_streams({fs: shows[fs] for fs in used})
    caption = (f"{op.capitalize()} request sizes {on}, every run's requests pooled per file system: "
               + "; ".join(f"{fs} runs {', '.join(_run_label(r) for r in rs)}" for fs, rs in used.items())
               + f". {_loss_text(complete, lost)}.")
    plot = TracePlot(f"size_cdf_{op}_{slug(label)}", "size_cdf", label, f"{label}: {op} request-size CDF",
                     caption, list(lines), [r["run_id"] for rs in used.values() for r in rs], complete, lost,
                     {"op": op, "unit": "KiB", "lines": lines}, streams={fs: shows[fs].key for fs in used})
    if images:
        merged = {f"{fs} ({len(traces[fs])} runs)": pooled(traces[fs]) for fs in lines}
        plot.image_png = _png(lambda buf: trace_plots.size_cdf(merged, buf, op=DATA_OPS[op],
                                                               title=f"{label}: {op} request sizes {on}"))
    return plot


def _lba(label: str, fs: str, trace: Trace, stream: Stream, run: StoredRun, stored: int,
         images: bool) -> TracePlot:
    """One run's LBA-over-time plot; ``trace`` is the view of ``stream``, ``stored`` how
    many runs its cell has in the store."""
    c = trace.columns
    m = data_requests(trace)
    t0 = int(c["time_ns"][0]) if len(trace) else 0
    seconds = (c["time_ns"][m].astype(np.int64) - t0) / 1e9
    gib = c["sector"][m].astype(np.float64) * SECTOR_BYTES / 2**30
    ops = c["op"][m]
    span = float(seconds.max()) if len(seconds) else 0.0
    edges = np.linspace(0.0, span or 1e-9, TIME_BINS + 1)
    data: dict[str, Any] = {"run_id": run["run_id"], "repetition": run["repetition"] + 1, "duration_s": span,
                            "offset_gib": {"min": float(gib.min()) if len(gib) else None,
                                           "max": float(gib.max()) if len(gib) else None},
                            "time_bin_edges_s": [float(x) for x in edges]}
    for op, code in DATA_OPS.items():
        sel = ops == code
        data[f"{op}_data_requests_issued"] = int(sel.sum())
        data[f"{op}_requests_per_bin"] = [int(x) for x in np.histogram(seconds[sel], bins=edges)[0]]
    complete, lost = _loss([trace])
    what = f"{repetition_text(run, stored, fs, label)} (run id {run['run_id']})"
    caption = (f"Where on {stream.text} the data requests of {what} went over time (reads blue, writes red; "
               f"beyond {trace_plots.SCATTER_MAX:,} requests binned, darker: more). {_loss_text(complete, lost)}.")
    plot = TracePlot(f"lba_{slug(label)}_{slug(fs)}", "lba", label, f"{label}: LBA over time, {fs}", caption,
                     [fs], [run["run_id"]], complete, lost, data, streams={fs: stream.key})
    if images:
        plot.image_png = _png(lambda buf: trace_plots.lba_over_time(trace, buf, what, bins=(400, 250),
                                                                    stream=stream))
    return plot


def trace_plots_section(results_dir: Path, runs: list[StoredRun], cells: list[StoredCell], *,
                        images: bool, progress: Progress | None = None) -> tuple[list[TracePlot], list[str]]:
    """The trace plots of a stored study and the trace files that were missing (their runs
    left out). Raises FslabError (from the trace reader) on an unreadable trace file."""
    files = trace_files(results_dir, runs, cells)
    plots: list[TracePlot] = []
    for label, by_fs in files.read(progress):
        traces = {fs: t.views for fs, t in by_fs.items()}
        shows = {fs: t.stream for fs, t in by_fs.items()}
        for op in DATA_OPS:
            cdf = _size_cdf(label, op, traces, files.groups[label], shows, images)
            if cdf is not None:
                plots.append(cdf)
        for fs, t in by_fs.items():
            plots.append(_lba(label, fs, t.views[t.first], t.stream, t.runs[t.first], t.stored, images))
    return plots, files.missing
