"""Writing a stored study's report as HTML, Markdown or JSON files (`fslab report --html …`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import FslabError
from .model import Report, build_report
from .trace_section import Progress, trace_plots_section


def load_report(results: Path, study_id: int | None, metric: str | None = None, *,
                trace_plots: bool = False, images: bool = False,
                progress: Progress | None = None) -> Report:
    """The report of a stored study; with ``trace_plots`` also its traced runs' plots (as
    data, and as PNG when ``images``), reading every trace file of the study."""
    from ..store import Store
    from ..study_lock import shown_status

    with Store(results, read_only=True) as store:
        row = store.study(study_id)
        runs, cells = store.runs(row.id), store.cells(row.id)
    if metric is not None and not any(metric in r["metrics"] for r in runs):
        stored = sorted({name for r in runs for name in r["metrics"]})
        raise FslabError(f"--metric {metric}: no stored run of study {row.id} has it; "
                         f"stored metrics: {', '.join(stored)}")
    report = build_report(row, runs, cells, metric, str(results))
    report.status = shown_status(report.status, results)  # "running" only while a process holds the lock
    if trace_plots:
        report.trace_plots, report.trace_missing = trace_plots_section(results, runs, cells, images=images,
                                                                       progress=progress)
    return report


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


def write_outputs(results: Path, study_id: int | None, metric: str | None, *, html: Path | None = None,
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
