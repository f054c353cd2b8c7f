"""The terminal report gives the interval of each difference, as HTML, Markdown and JSON
do: a cell shows '-20.7%', the line under the table '-20.7% (95% CI -50.2% to +26.2%; …)'."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from test_rank_groups import store_study

from fslab.report.outputs import load_report
from fslab.report.terminal import render_terminal

VALUES = {"ext4": [100.0, 131.0, 88.0, 118.0, 95.0], "xfs": [150.0, 160.0, 141.0, 156.0, 149.0]}


def test_each_difference_is_printed_with_its_interval(tmp_path: Path) -> None:
    results = store_study(tmp_path, "[filesystems.ext4]\n[filesystems.xfs]\n", VALUES)
    report = load_report(results, None)
    console = Console(record=True, width=300)
    for renderable in render_terminal(report):
        console.print(renderable)
    text = console.export_text()
    [finding] = report.findings
    [versus] = [e.versus_best for e in report.rows[0].estimates if e.versus_best is not None]
    assert "95% CI" in versus.text and versus.text.rstrip(")") in text  # "-29.6% (95% CI -42.6% to -13.8%"
    assert finding.text in text
