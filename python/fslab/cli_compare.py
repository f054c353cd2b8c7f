"""`fslab compare A B`: two studies, or two file systems of one study, side by side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from .units import counted

if TYPE_CHECKING:
    from .report.compare import Comparison


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)


def compare(
    a: Annotated[str, typer.Argument(help="A: results directory, DIR:STUDY, or a file system of --study")],
    b: Annotated[str, typer.Argument(help="B: the same kind as A")],
    results: Annotated[Path, typer.Option("--results", "-r", help="results directory (file system names)")] = Path(
        "fslab-results"),
    study: Annotated[Optional[int], typer.Option("--study", "-s", min=1, help="study id (default: newest)")] = None,
    metric: Annotated[Optional[list[str]], typer.Option(
        help="metric to compare (repeatable; default: each case's primary metric)")] = None,
    test: Annotated[str, typer.Option(help="welch or mann-whitney")] = "welch",
    variable: Annotated[Optional[list[str]], typer.Option(
        "--variable", help="a defining field that is the variable under test (repeatable, e.g. --variable direct "
        "--variable ioengine, --variable memory, --variable mount): cases that differ in it are paired; "
        "cases that differ in any other field are listed as not compared")] = None,
    html: Annotated[Optional[Path], typer.Option("--html", help="also write this HTML file")] = None,
    markdown: Annotated[Optional[Path], typer.Option("--markdown", help="also write this Markdown file")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the comparison as JSON only")] = False,
) -> None:
    """Per workload case and metric: B relative to A with its 95% interval, p (Holm-corrected),
    effect size; and every other provenance fact that differs between A and B. Cases whose
    definitions differ besides the variable under test are not paired: they are listed as
    not compared, and the exit status is 1."""
    from rich.markup import escape
    from rich.table import Table

    from .cli import console, err_console
    from .report.compare import compare as run_compare
    from .report.compare import (
        left_out_line,
        method_note,
        not_compared_lines,
        resolve_sides,
        summary_lines,
        table_rows,
        variable_text,
        warning_lines,
    )
    from .report.html import render_compare_html
    from .report.markdown import render_compare_markdown

    side_a, side_b = resolve_sides(a, b, results, study)
    c = run_compare(side_a, side_b, metric, test, variable)
    if html is not None:
        html.write_text(render_compare_html(c))
        err_console.print(f"wrote {html}", highlight=False)
    if markdown is not None:
        markdown.write_text(render_compare_markdown(c))
        err_console.print(f"wrote {markdown}", highlight=False)
    if as_json:
        print(json.dumps(c.to_json(), indent=2))
        _exit_if_left_out(c)
        return
    columns, rows = table_rows(c)
    title = f"compare A = {escape(c.a)}, B = {escape(c.b)} ({c.mode})\n{escape(variable_text(c))}"
    if rows:
        table = Table(title=title, title_justify="left")
        for i, col in enumerate(columns):
            table.add_column(escape(col), justify="right" if 1 < i < 7 else "left")
        for row in rows:
            table.add_row(*[escape(v) for v in row])
        console.print(table)
        console.print(method_note(c), style="dim", highlight=False)
    else:
        console.print(f"{title}\nno case compared", highlight=False)
    left_out = left_out_line(c)
    if left_out:
        console.print(f"[yellow]{escape(left_out)}[/yellow]", highlight=False)
    for line in summary_lines(c) if rows else []:
        console.print(escape(line), highlight=False)
    for d in c.differences:
        if d.under_test:
            console.print(escape(f"under test: {d.fact}: A {d.a} / B {d.b}"), highlight=False)
    for line in warning_lines(c):
        console.print(f"[yellow]warning: {escape(line)}[/yellow]", highlight=False)
    for line in not_compared_lines(c):
        console.print(f"[yellow]{escape(line)}[/yellow]", highlight=False)
    _exit_if_left_out(c)


def _exit_if_left_out(c: Comparison) -> None:
    """Exit status 1 when cases were left out: the comparison is not the whole of A and B."""
    if c.not_compared:
        from .cli import err_console

        err_console.print(f"{counted(len(c.not_compared), 'case')} not compared; see 'not compared' above "
                          "(exit status 1)", highlight=False)
        raise typer.Exit(1)
