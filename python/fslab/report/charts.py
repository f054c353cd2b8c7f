"""Grouped bar charts like the seed papers' figures: one chart per value of a chosen axis
(e.g. one per fio pattern), cases on the x axis, one bar per file system, the bar the
mean over repetitions and its error bar the 95% interval. Built from stored runs only.

Every bar carries a gid ``bar|<filesystem>|<case>`` so tests (and users' scripts) can
read the SVG back and check what was drawn."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt  # noqa: E402

from ..analysis.stats import summarize  # noqa: E402
from ..store import stored_metric_kind  # noqa: E402
from ..stored import STATUS_OK, Params, StoredCell, StoredRun  # noqa: E402
from ..units import assignments_text  # noqa: E402
from .ticks import category_ticks  # noqa: E402
from .units import display_scale, fmt  # noqa: E402


@dataclass
class Chart:
    title: str
    metric: str
    unit: str
    cases: list[str] = field(default_factory=list)
    filesystems: list[str] = field(default_factory=list)
    values: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # (fs, case)


def _case_label(axes: Params, skip: str | None) -> str:
    return assignments_text((k, v) for k, v in axes.items() if k != skip) or "all"


def _by_label(axes: Params, by: str | None) -> str:
    """'rw=read': the chart a cell belongs to when charts are split by axis ``by`` ('' when
    the cell has no such axis)."""
    return f"{by}={axes[by]}" if by is not None and by in axes else ""


def build_charts(runs: list[StoredRun], cells: list[StoredCell], by: str | None,
                 metric: str | None = None) -> list[Chart]:
    charts: dict[tuple[str, str], Chart] = {}
    for cell in cells:
        name = metric or cell["primary_metric"]
        key = (cell["workload"], _by_label(cell["axes"], by))
        chart = charts.get(key)
        if chart is None:
            title = cell["workload"] + (f": {key[1]}" if key[1] else "")
            chart = charts[key] = Chart(title, name, stored_metric_kind(runs, name).unit)
        case = _case_label(cell["axes"], by if key[1] else None)
        if case not in chart.cases:
            chart.cases.append(case)
        if cell["filesystem"] not in chart.filesystems:
            chart.filesystems.append(cell["filesystem"])
    by_cell = {c["id"]: c for c in cells}
    for run in runs:
        stored = by_cell.get(run["cell"]["id"])
        if stored is None or run["status"] != STATUS_OK:
            continue
        key = (stored["workload"], _by_label(stored["axes"], by))
        chart = charts[key]
        m = run["metrics"].get(chart.metric)
        if m is not None and m["value"] is not None:
            case = _case_label(stored["axes"], by if key[1] else None)
            chart.values.setdefault((stored["filesystem"], case), []).append(float(m["value"]))
    return list(charts.values())


def draw(chart: Chart, path_stem: Path) -> list[Path]:
    """Write the chart as PNG and SVG; returns the files written."""
    means = {k: summarize(v) for k, v in chart.values.items() if v}
    magnitude = max((s.mean for s in means.values()), default=0.0)
    divisor, unit_label = display_scale(chart.unit, magnitude)
    n_fs = max(len(chart.filesystems), 1)
    width = 0.8 / n_fs
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(chart.cases) * max(1, n_fs / 2)), 4.5))
    ns: set[int] = set()
    crossing: list[str] = []
    for i, fs in enumerate(chart.filesystems):
        for j, case in enumerate(chart.cases):
            summary = means.get((fs, case))
            if summary is None:
                continue
            ns.add(summary.n)
            height = summary.mean / divisor
            # Student's t, or on the log scale where that would reach below zero (stats.summarize)
            low, high = summary.ci or (summary.mean, summary.mean)
            err, err_up = (summary.mean - low) / divisor, (high - summary.mean) / divisor
            x = j - 0.4 + width * (i + 0.5)
            # An interval reaching below zero (values that can be negative) is drawn to zero,
            # where a hollow red marker says it goes on; the note under the chart gives its end.
            yerr = [[min(err, height)], [err_up]]
            bars = ax.bar(x, height, width, yerr=yerr, capsize=2, color=f"C{i}", label=fs if j == 0 else None)
            bars.patches[0].set_gid(f"bar|{fs}|{case}")
            if height - err < 0 <= min(chart.values[(fs, case)]):
                marker = ax.plot([x], [0], "o", mfc="white", mec="#c00", mew=1.5, ms=6, clip_on=False)[0]
                marker.set_gid(f"crosses|{fs}|{case}")
                crossing.append(f"{fs}{', ' + case if case else ''}: {fmt(height - err)}")
    n_text = "n=" + "/".join(str(n) for n in sorted(ns)) if ns else "no data"
    ax.set_ylabel(f"{chart.metric} [{unit_label}]")
    logged = any(s.log_scale for s in means.values())
    ax.set_title(f"{chart.title}\nmean and 95% CI over repetitions ({n_text})"
                 + ("; asymmetric whiskers: the interval on the log scale" if logged else ""), fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    ax.set_ylim(bottom=0)
    category_ticks(ax, range(len(chart.cases)), [c.replace(", ", "\n") for c in chart.cases], width=24,
                   fontsize=7)
    if crossing:
        more = f" (+{len(crossing) - 3} more)" if len(crossing) > 3 else ""
        fig.text(0.01, 0.01, "○ 95% interval reaches below zero, drawn to 0; lower ends: "
                 + "; ".join(crossing[:3]) + more, fontsize=7, color="#c00", gid="crosses-note")
        fig.tight_layout(rect=(0, 0.04, 1, 1))
    else:
        fig.tight_layout()
    written = []
    for suffix in (".png", ".svg"):
        out = path_stem.with_suffix(suffix)
        fig.savefig(out, dpi=110)
        written.append(out)
    plt.close(fig)
    return written


def write_charts(runs: list[StoredRun], cells: list[StoredCell], out_dir: Path,
                 by: str | None = None, metric: str | None = None) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for chart in build_charts(runs, cells, by, metric):
        stem = re.sub(r"[^A-Za-z0-9_.=-]+", "_", chart.title).strip("_")
        written += draw(chart, out_dir / stem)
    return written


def bars_in_svg(svg_text: str) -> list[tuple[str, str]]:
    """(file system, case) of every bar drawn in an SVG written by ``draw``."""
    return [(fs, case) for fs, case in re.findall(r'id="bar\|([^|"]*)\|([^"]*)"', svg_text)]
