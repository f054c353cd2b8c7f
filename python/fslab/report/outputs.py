"""Writing a stored study's report as HTML, Markdown or JSON files (`fslab report --html …`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import FslabError
from .model import Report, build_report


def load_report(results: Path, study_id: int | None, metric: str | None = None) -> Report:
    from ..store import Store

    if not (results / "fslab.sqlite").exists():
        raise FslabError(f"--results {results}: no fslab.sqlite there; run a study first (`fslab run STUDY`)")
    with Store(results, read_only=True) as store:
        row = store.study(study_id)
        runs, cells = store.runs(row.id), store.cells(row.id)
    if metric is not None and not any(metric in r["metrics"] for r in runs):
        stored = sorted({name for r in runs for name in r["metrics"]})
        raise FslabError(f"--metric {metric}: no stored run of study {row.id} has it; stored: {', '.join(stored)}")
    return build_report(row, runs, cells, metric, str(results))


def write_outputs(results: Path, study_id: int | None, metric: str | None, *, html: Path | None = None,
                  markdown: Path | None = None, as_json: Path | None = None) -> list[str]:
    """Write each requested file; returns one line per file written."""
    from .html import render_html
    from .markdown import render_markdown

    report = load_report(results, study_id, metric)
    done = []
    for path, render in ((html, render_html), (markdown, render_markdown)):
        if path is not None:
            path.write_text(render(report))
            done.append(f"wrote {path}")
    if as_json is not None:
        text = json.dumps(report.to_json(), indent=2) + "\n"
        if str(as_json) == "-":
            sys.stdout.write(text)
        else:
            as_json.write_text(text)
            done.append(f"wrote {as_json}")
    return done
