"""Trace plots (matplotlib, Agg): request-size CDFs overlaid across traces, LBA over time
(seekwatcher-style) and IOPS over time. LBA plots bin millions of requests into a 2D
histogram drawn as one image, so they stay fast and legible at any trace size."""

from __future__ import annotations

import textwrap
from pathlib import Path
from types import ModuleType
from typing import IO, TYPE_CHECKING, Any, TypeVar

import numpy as np

from ..analysis.traces import DEVICE, Stream, data_requests
from ..trace.formats import EV_COMPLETE, OP_READ, OP_WRITE, SECTOR_BYTES, Trace
from .ticks import category_ticks

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _plt() -> ModuleType:
    """matplotlib.pyplot on the Agg backend (files only), imported when a plot is drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _incomplete_note(traces: dict[str, Trace]) -> str:
    lossy = [k for k, t in traces.items() if not t.complete]
    return f"  [INCOMPLETE traces: {', '.join(lossy)}]" if lossy else ""


SCATTER_MAX = 20_000  # up to this many requests an LBA plot draws each as a dot, beyond it bins them
# Where a plot goes: a file name, or a binary buffer (PNG) for an inline image.
Out = TypeVar("Out", Path, IO[bytes])


def _save(fig: Figure, out: Out) -> Out:
    """Lay out, write and close a figure (closing frees its memory in long reports)."""
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    _plt().close(fig)
    return out


def _title(ax: Any, text: str) -> None:
    """A title wrapped to the figure's width (about 11 characters of 10-point type an inch):
    one that names the stream of each file system is longer than a line."""
    ax.set_title(textwrap.fill(text, int(ax.figure.get_figwidth() * 11)), fontsize=10)


def size_cdf(traces: dict[str, Trace], out: Out, op: int = OP_WRITE, title: str = "I/O size CDF") -> Out:
    """CDF of data-request sizes (KiB, log scale) of each trace, overlaid."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, t in traces.items():
        m = data_requests(t) & (t.columns["op"] == op)
        sizes = np.sort(t.columns["nr_sector"][m].astype(np.float64) * SECTOR_BYTES / 1024)
        if len(sizes):
            ax.step(sizes, np.arange(1, len(sizes) + 1) / len(sizes), where="post", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel(f"{'write' if op == OP_WRITE else 'read'} request size (KiB)")
    ax.set_ylabel("fraction of requests")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend()
    _title(ax, title + _incomplete_note(traces))
    return _save(fig, out)


def lba_over_time(trace: Trace, out: Out, label: str = "", bins: tuple[int, int] = (800, 500),
                  stream: Stream = DEVICE) -> Out:
    """Where on the device requests went over time: reads blue, writes red; a dot per
    request, or (beyond SCATTER_MAX requests) a 2D histogram shaded by count. ``trace`` is
    the view of ``stream`` (analysis.traces.stream_view), named on the axis and in the title."""
    plt = _plt()
    c = trace.columns
    m = data_requests(trace)
    t0 = int(c["time_ns"][0]) if len(trace) else 0
    fig, ax = plt.subplots(figsize=(8, 4.5))
    gib = 2**30 / SECTOR_BYTES
    x_all = (c["time_ns"][m].astype(np.int64) - t0) / 1e9
    y_all = c["sector"][m].astype(np.float64) / gib
    if len(x_all):
        xr = (0.0, max(float(x_all.max()), 1e-6))
        yr = (float(y_all.min()), max(float(y_all.max()), float(y_all.min()) + 1e-6))
        for op, cmap in ((OP_READ, "Blues"), (OP_WRITE, "Reds")):
            sel = c["op"][m] == op
            if not np.any(sel):
                continue
            colour = "tab:red" if op == OP_WRITE else "tab:blue"
            if len(x_all) <= SCATTER_MAX:  # few requests: one visible dot each (a histogram cell is a pixel)
                ax.scatter(x_all[sel], y_all[sel], s=6, color=colour, alpha=0.6, linewidths=0)
            else:
                h, xe, ye = np.histogram2d(x_all[sel], y_all[sel], bins=bins, range=(xr, yr))
                h = np.ma.masked_equal(h.T, 0)
                ax.imshow(np.log1p(h), origin="lower", aspect="auto", cmap=cmap, interpolation="nearest",
                          extent=(xe[0], xe[-1], ye[0], ye[-1]), vmin=0)
            ax.plot([], [], "s", color=colour, label="write" if op == OP_WRITE else "read")
        ax.legend(loc="upper right")
    ax.set_xlabel("time (s)")
    ax.set_ylabel(f"offset on the {stream.short} (GiB)")
    title = f"LBA over time on {stream.text}: {label}" + ("" if trace.complete else "  [INCOMPLETE trace]")
    _title(ax, title)
    return _save(fig, out)


def iops_over_time(traces: dict[str, Trace], out: Path, bin_s: float = 0.1, on: str = "on the device") -> Path:
    """Completed data requests per second over time, in bins of ``bin_s`` seconds; ``on``
    names the stream (as ``io_counts``)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 3.6))
    for label, t in traces.items():
        c = t.columns
        m = (c["event"] == EV_COMPLETE) & (c["nr_sector"] > 0)
        if not np.any(m):
            continue
        ts = (c["time_ns"][m].astype(np.int64) - int(c["time_ns"][0])) / 1e9
        nb = max(1, int(np.ceil(ts.max() / bin_s)))
        counts, edges = np.histogram(ts, bins=nb, range=(0, nb * bin_s))
        ax.plot(edges[:-1], counts / bin_s, label=label, drawstyle="steps-post")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("IOPS (requests/s)")
    ax.grid(alpha=0.3)
    ax.legend()
    _title(ax, f"IOPS over time {on}" + _incomplete_note(traces))
    return _save(fig, out)


def io_counts(results: dict[str, dict[str, Any]], out: Path, on: str = "on the device") -> Path:
    """Bar chart of completed requests by op per trace (from ``analyze`` results); ``on``
    names the stream they count ("on " + analysis.traces.Stream.text, or report.traced_runs.
    on_streams naming each file system's)."""
    plt = _plt()
    labels = list(results)
    fig, ax = plt.subplots(figsize=(max(6.4, 1.1 * len(labels) + 2), 4.8))
    ops = ("read", "write", "flush")
    width = 0.8 / len(ops)
    for i, op in enumerate(ops):
        ax.bar(np.arange(len(labels)) + i * width, [results[k]["requests"][op] for k in labels], width, label=op)
    ax.set_ylabel("requests")
    ax.legend()
    _title(ax, f"I/O count: requests {on}")
    category_ticks(ax, list(np.arange(len(labels)) + width), labels)  # last: it lays out the figure
    return _save(fig, out)


def plot_all(traces: dict[str, Trace], out_dir: Path) -> list[Path]:
    """Every trace plot for these traces; returns the files written. Each plot shows the
    stream the report shows (an md array's md-device bios), and names it."""
    from ..analysis.traces import analyze, shown
    from .traced_runs import on_streams

    out_dir.mkdir(parents=True, exist_ok=True)
    seen = {label: shown(t) for label, t in traces.items()}
    views = {label: view for label, (_, view) in seen.items()}
    on = on_streams({label: stream for label, (stream, _) in seen.items()})
    paths = [size_cdf(views, out_dir / "size_cdf_write.png", title=f"write request sizes {on}"),
             iops_over_time(views, out_dir / "iops_over_time.png", on=on),
             io_counts({k: analyze(t) for k, t in views.items()}, out_dir / "io_counts.png", on=on)]
    for label, (stream, view) in seen.items():
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in label)
        paths.append(lba_over_time(view, out_dir / f"lba_{safe}.png", label, stream=stream))
    return paths
