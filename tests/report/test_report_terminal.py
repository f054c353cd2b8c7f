"""The terminal report is drawn from the report model, as HTML and Markdown are: the same
cells in every renderer, failed runs counted in the cells and grouped by reason with the
run to look at (no-root tier: fake device, null file system, null workload, real SQLite)."""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fslab.cli import app
from fslab.report.html import render_html
from fslab.report.markdown import render_markdown
from fslab.report.outputs import load_report
from fslab.report.summary import summary_table
from fslab.runner import run_study

STUDY = """
[study]
name = "terminal"
repetitions = 3
drop_caches = false

[device]
kind = "fake"
directory = "{fake}"

[filesystems.null]
[filesystems.other]
type = "null"

[[workloads]]
kind = "null"
name = "value"
[workloads.axes]
value = [1.0, 3.0]

[[workloads]]
kind = "null"
name = "broken"
fail = true
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("terminal")
    (tmp / "fake").mkdir()
    (tmp / "study.toml").write_text(STUDY.format(fake=tmp / "fake"))
    outcome = run_study(str(tmp / "study.toml"), results_dir=tmp / "results")
    assert outcome.runs_failed == 6  # the broken workload, 3 runs per file system
    return tmp / "results"


def test_terminal_html_and_markdown_show_the_same_cells(results: Path) -> None:
    report = load_report(results, None)
    columns, rows = summary_table(report)
    assert columns == ["workload", "metric [unit]", "null", "other"]
    broken = next(r for r in rows if r[0] == "broken")
    assert broken[2:] == ["3 failed", "3 failed"]  # counted in the cell, not a bare '—'
    done = CliRunner().invoke(app, ["report", "-r", str(results)], terminal_width=250)
    assert done.exit_code == 0, done.output
    html, md = render_html(report), render_markdown(report)
    assert [c.metric for c in report.charts] == ["null_value"] and report.charts[0].title.startswith("value:")
    for row in rows:
        line = next(ln for ln in done.output.splitlines() if ln.startswith(f"│ {row[0]} "))
        cells = [c.strip() for c in line.strip("│").split("│")]
        assert cells == row  # the terminal row is the model's row, cell for cell
        tds = "".join(f'<td class="num">{escape(c)}</td>' if i >= 2 else f"<td>{escape(c)}</td>"
                      for i, c in enumerate(row))
        assert f"<tr>{tds}</tr>" in html
        assert "| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" in md


def test_failures_grouped_with_the_run_to_look_at(results: Path) -> None:
    done = CliRunner().invoke(app, ["report", "-r", str(results)], terminal_width=250)
    assert "6 of 18 stored runs failed, for one reason:" in done.output
    assert "6 x the null workload failed, as its parameters asked (fail = true)" in done.output
    ids = re.findall(r"run id (\d+): `fslab report -r " + re.escape(str(results)) + r" --run (\d+)`", done.output)
    assert len(ids) == 1 and ids[0][0] == ids[0][1]
    report = load_report(results, None)
    assert int(ids[0][0]) in {f.run_id for f in report.failed}
