"""Loading a stored study's report (`fslab report`), per host when several machines ran it,
and writing it as HTML, Markdown or JSON files (`fslab report --html …`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import FslabError
from ..metrics import display_name
from ..store import Store
from ..stored import STATUS_OK, StoredCell, StoredRun, StudyRow
from ..study_lock import shown_status
from .data import Report
from .hosts import host_of, hosts
from .model import build_report
from .tables import MetricChoice, metric_names
from .trace_files import Progress
from .trace_section import trace_plots_section


def load_study(results: Path, study_id: int | None) -> tuple[StudyRow, list[StoredRun], list[StoredCell]]:
    """A stored study (the newest when ``study_id`` is None), its runs and its cells."""
    with Store(results, read_only=True) as store:
        row = store.study(study_id)
        return row, store.runs(row.id), store.cells(row.id)


def load_report(results: Path, study_id: int | None, metric: MetricChoice = None, *,
                trace_plots: bool = False, images: bool = False,
                progress: Progress | None = None) -> Report:
    """The report of a stored study; with ``trace_plots`` also its traced runs' plots (as
    data, and as PNG when ``images``), reading every trace file of the study."""
    row, runs, cells = load_study(results, study_id)
    metric = full_metric_names(metric, runs, row.id)
    report = build_report(row, runs, cells, metric, str(results))
    # "running" only while a process holds the lock; failed runs said beside "complete"
    report.status = shown_status(report.status, results, len(runs), sum(r["status"] != STATUS_OK for r in runs))
    if trace_plots:
        report.trace_plots, report.trace_missing = trace_plots_section(results, runs, cells, images=images,
                                                                       progress=progress)
    return report


def full_metric_names(metric: MetricChoice, runs: list[StoredRun], study_id: int) -> MetricChoice:
    """The stored names of the metrics asked for: a name as the tables show it, without its
    unit suffix (``block_write`` for ``block_write_bytes_per_s``), is taken when it names
    exactly one stored metric. Raises FslabError listing the stored metrics otherwise."""
    if metric is None:
        return None
    stored = sorted({m for r in runs for m in r["metrics"]})
    full: list[str] = []
    for name in metric_names(metric):
        assert name is not None
        if name in stored:
            full.append(name)
            continue
        matches = [m for m in stored if display_name(m) == name]
        if len(matches) != 1:
            why = (f"names {' and '.join(matches)}: give the full name" if matches
                   else f"no stored run of study {study_id} has it")
            raise FslabError(f"--metric {name}: {why}; stored metrics: {', '.join(stored)}")
        full.append(matches[0])
    return full


def reports_by_host(results: Path, study_id: int | None, metric: MetricChoice = None) -> list[tuple[str, Report]]:
    """(host, the report of the runs it ran) for each machine that ran successful runs of
    the study; empty when one machine ran them all."""
    row, runs, cells = load_study(results, study_id)
    metric = full_metric_names(metric, runs, row.id)
    names = hosts(runs)
    if len(names) < 2:
        return []
    return [(host, build_report(row, [r for r in runs if host_of(r) == host], cells, metric, str(results)))
            for host in names]


def write_figures(report: Report, markdown: Path) -> dict[str, str]:
    """The trace plots as PNG files beside a Markdown file (``NAME_figures/``); returns each
    plot's path relative to the Markdown file, as its image links need."""
    if not report.trace_plots:
        return {}
    folder = markdown.with_name(markdown.stem + "_figures")
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for plot in report.trace_plots:
        (folder / f"{plot.id}.png").write_bytes(plot.image_png)
        out[plot.id] = f"{folder.name}/{plot.id}.png"
    return out


def write_outputs(results: Path, study_id: int | None, metric: MetricChoice, *, html: Path | None = None,
                  markdown: Path | None = None, as_json: Path | None = None,
                  progress: Progress | None = None) -> list[str]:
    """Write each requested file; returns one line per file written."""
    from .html import render_html
    from .markdown import render_markdown

    report = load_report(results, study_id, metric, trace_plots=True, images=bool(html or markdown),
                         progress=progress)
    done = [f"trace file missing, run left out of the trace plots: {m}" for m in report.trace_missing]
    if html is not None:
        html.write_text(render_html(report))
        done.append(f"wrote {html}")
    if markdown is not None:
        figures = write_figures(report, markdown)
        markdown.write_text(render_markdown(report, figures))
        done.append(f"wrote {markdown}" + (f" and {len(figures)} trace plots beside it" if figures else ""))
    if as_json is not None:
        text = json.dumps(report.to_json(), indent=2) + "\n"
        if str(as_json) == "-":
            sys.stdout.write(text)
        else:
            as_json.write_text(text)
            done.append(f"wrote {as_json}")
    return done
