"""The `fslab` command. A thin layer: parse arguments, call the library, print. Every
FslabError becomes one message and exit status 2, in one place (``main``)."""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn, Optional

import typer
from rich.console import Console
from rich.markup import escape

from .datarecords import replace
from .errors import ExecutorLost, FslabError, ResultsUnwritable, SpecError
from .resume_hint import resume_command
from .stored import STATUS_OK
from .units import counted

if TYPE_CHECKING:
    from .estimate import TimeEstimate
    from .executors import Executor
    from .jobdata.record import RunRecord
    from .plan import Plan
    from .runner import PassOutcome, StudyOutcome, StudyProgress
    from .spec import StudySpec
    from .stored import StoredCell, StoredRun

app = typer.Typer(
    add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
    help="File-system performance studies: one study file, one command, honest statistics.",
)
# Tables are wide; when output goes to a file or pipe, don't squeeze them into 80 columns.
console = Console(width=None if sys.stdout.isatty() else 200)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 200)

DEFAULT_RESULTS = Path("fslab-results")
ResultsOpt = Annotated[Path, typer.Option("--results", "-r", help="results directory")]
StudyOpt = Annotated[Optional[int], typer.Option("--study", "-s", min=1, help="study id (default: newest)")]


@app.command()
def plan(
    study: Annotated[str, typer.Argument(help="study file or preset name")],
    quick: Annotated[bool, typer.Option(help="scale sizes and runtimes down")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
    jobs: Annotated[Optional[Path], typer.Option(
        help="also write each job as JSON here (for `fslab job run`)")] = None,
    allow_exec: Annotated[bool, typer.Option(
        "--allow-exec", help="allow workload options that run programs (fio exec_prerun, ...)")] = False,
    results: Annotated[Path, typer.Option(
        "--results", "-r", help="results directory whose earlier runs the time and noise estimates come from "
        "(read only, if it is there)")] = DEFAULT_RESULTS,
) -> None:
    """Show the cells and runs a study expands to, without running anything. Every check
    `fslab run` makes that needs no root runs too, and every check of a disk of yours that
    needs no write (not a block device, the root disk, mounted, in use, a signature): what a
    run would refuse exits 2 here.
    Times and runs needed are estimated from the runs stored in the results directory."""
    import platform

    from . import cli_plan_view as out
    from .forecast import forecast, history_of
    from .store import check_results_path

    spec, source, p = _checked_plan(study, quick, allow_exec)
    check_results_path(results)  # a run into this folder would refuse it
    history, history_source = history_of(results)
    outlook = forecast(p, history, platform.node(), history_source)
    if jobs is not None:
        _write_jobs(p, jobs)
    if as_json:
        print(json.dumps(out.plan_json(spec, source, quick, p, outlook), indent=2))
        return
    console.print(out.cells_table(spec, source, quick, p))
    console.print(out.runs_text(spec, p, outlook), highlight=False)
    for line in out.device_lines(spec, p) if p.jobs else []:
        console.print(line, highlight=False)
    for line in outlook.lines():
        console.print(escape(line), highlight=False)
    for line, highlight in out.placement_lines(p):
        console.print(line, highlight=highlight)


def _checked_plan(study: str, quick: bool, allow_exec: bool) -> tuple[StudySpec, str, Plan]:
    """The study planned, and every check that needs no root made on it."""
    from .backends import choose_backend
    from .plan import make_plan
    from .preflight import check_plan
    from .study import load_spec

    spec, source, _ = load_spec(study, allow_exec=allow_exec)
    study_dir = Path(source).parent.resolve() if Path(source).is_file() else Path.cwd()
    p = make_plan(spec, backends=choose_backend, quick=quick, source=source, study_dir=study_dir,
                  allow_exec=allow_exec)
    check_plan(p, source=source, disks=True)
    return spec, source, p


def _write_jobs(p: Plan, jobs: Path) -> None:
    """`fslab plan --jobs DIR`: each job as JSON, for `fslab job run`."""
    from .job.entry import write_job

    jobs.mkdir(parents=True, exist_ok=True)
    for job in p.jobs:
        write_job(job, jobs / f"{job.id}.json")
    err_console.print(f"wrote {len(p.jobs)} jobs to {jobs}: run one with "
                      f"`fslab job run {shlex.quote(str(jobs / p.jobs[0].id) + '.json')} --out DIR`" if p.jobs else
                      f"no jobs to write to {jobs}", highlight=False)


@app.command()
def run(
    study: Annotated[Optional[str], typer.Argument(
        help="study file or preset name (`fslab list --presets`); or none, with --fs and --fio")] = None,
    quick: Annotated[bool, typer.Option(help="smoke run: smaller sizes, shorter runtimes, 2 repetitions")] = False,
    results: ResultsOpt = DEFAULT_RESULTS,
    fs: Annotated[Optional[str], typer.Option(
        "--fs", help="a one-line study: the file systems to compare, e.g. ext4,xfs (with --fio)")] = None,
    fio: Annotated[Optional[str], typer.Option(
        "--fio", help="a one-line study: fio options, e.g. 'rw=randwrite bs=4k fsync=1'; the study file it runs "
        "(repetitions = \"auto\", image device) is written to the results directory or --save")] = None,
    save: Annotated[Optional[Path], typer.Option(help="where a one-line study's file is written")] = None,
    resume: Annotated[bool, typer.Option(help="continue an interrupted run of this study")] = False,
    retry_failed: Annotated[bool, typer.Option(
        help="run the failed runs of this study's newest run again (failures stay as history)")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress output")] = False,
    destroy_data_on: Annotated[Optional[list[str]], typer.Option(
        "--destroy-data-on", help="confirm that fslab may format this real block device (once per disk "
        "the study names: its [device], entries' own devices, array members)")] = None,
    allow_exec: Annotated[bool, typer.Option(
        "--allow-exec", help="allow workload options that run programs as root (fio exec_prerun, "
        "exec_postrun, ioengine=exec), inline or in a job file")] = False,
    executor: Annotated[Optional[str], typer.Option(
        help="local (default) or tls://HOST:PORT: each job runs on an `fslab worker` of that Dask scheduler")] = None,
    tls: Annotated[Optional[Path], typer.Option(
        "--tls", help="the lab's certificates (`fslab lab init DIR`) for a tls:// executor")] = None,
    insecure: Annotated[bool, typer.Option(
        "--insecure", help="allow a plaintext tcp:// (dask://) scheduler: anyone who reaches it runs code as root on its workers")] = False,
) -> None:
    """Run a study: make, mount and measure every cell, store every run."""
    from .runner import run_study

    study = _study_to_run(study, fs, fio, save, results, allow_exec, quiet)
    view = _RunProgress(quiet)
    jobs_executor = _open_jobs_executor(executor, tls, insecure, view)
    access = [*(["--tls", str(tls)] if tls else []), *(["--insecure"] if insecure else [])]
    continue_with = resume_command(study, results, quick, destroy_data_on or [], allow_exec, executor, access)
    try:
        with view.progress:
            outcome = run_study(
                study, results_dir=results, quick=quick, resume=resume, retry_failed=retry_failed,
                allowed_devices=frozenset(destroy_data_on or []), allow_exec=allow_exec,
                on_start=view.on_start, executor=jobs_executor,
                on_record=view.on_record, on_notice=view.on_notice, on_pass=view.on_pass,
                on_progress=view.on_progress,
            )
    except (ResultsUnwritable, ExecutorLost, KeyboardInterrupt) as exc:
        _explain_stop(exc, results, continue_with)
    _print_outcome(outcome, results, quiet, continue_with)


def _study_to_run(study: str | None, fs: str | None, fio: str | None, save: Path | None, results: Path,
                  allow_exec: bool, quiet: bool) -> str:
    """The study file or preset to run: the one given, or a one-line study (--fs, --fio)
    written first, then run like any study file."""
    if (fs is None) != (fio is None) or (fs is not None) == (study is not None):
        raise SpecError("give a study file (or preset), or a one-line study: --fs ext4,xfs --fio 'rw=randwrite bs=4k'",
                        field="run")
    if study is not None:
        return study
    from .oneline import write_study

    assert fs is not None and fio is not None
    written = str(write_study(fs, fio, save, results, allow_exec=allow_exec))
    if not quiet:
        err_console.print(f"study file: {escape(written)} (edit it and run `fslab run` on it again)", highlight=False)
    return written


class _RunProgress:
    """What `fslab run` shows while a study runs: a progress bar on a terminal, a line per
    run otherwise. Time left comes from fslab.estimate (runs of the same workload and
    backend, setups and guest boots counted per job), not from rich's average over all
    runs so far."""

    def __init__(self, quiet: bool):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

        self.quiet = quiet
        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[eta]}"), TextColumn("{task.fields[last]}"),
            console=err_console, disable=quiet or not err_console.is_terminal,
        )
        self.task: TaskID | None = None
        self.plain = not quiet and not err_console.is_terminal
        self.later = ""  # an auto study: what further passes could take at most
        self.passes_counted = 0
        self.waiting_said_at = 0.0

    def on_start(self, p: Plan, study_id: int, remaining: int, estimate: TimeEstimate) -> None:
        if not self.quiet:
            repetitions = (f"{p.auto.min_n}–{p.auto.max_n} repetitions (auto: {p.auto.describe()})"
                           if p.auto else counted(p.repetitions, "repetition"))
            err_console.print(
                f"study {study_id}: {counted(len(p.cells), 'cell')} x {repetitions}, "
                f"{counted(remaining, 'run')} to do{' first' if p.auto else ''}, order {p.order} (seed {p.seed})"
                + (" [quick: scaled down, not for conclusions]" if p.quick else ""), highlight=False)
            err_console.print(f"estimated time: {escape(estimate.text())}", highlight=False)
            for s in p.skipped:
                err_console.print(f"[yellow]{s.filesystem}: {s.reason}[/yellow]")
            if p.uncompared():
                err_console.print(f"[yellow]{escape(p.uncompared() or '')}[/yellow]", highlight=False)
        self.task = self.progress.add_task("runs", total=remaining, last="", eta=escape(estimate.short()))
        self.passes_counted = p.auto.min_n if p.auto else 0  # their runs are in the total already

    def on_pass(self, outcome: PassOutcome) -> None:
        assert self.task is not None
        if outcome.next_pass >= self.passes_counted:
            self.progress.update(self.task, total=(self.progress.tasks[0].total or 0) + outcome.runs)
        self.later = ("" if outcome.runs == 0 or outcome.next_pass + 1 >= outcome.passes_max
                      else f"; later passes {outcome.at_most_later.at_most()}")
        if not self.quiet and outcome.next_pass >= outcome.decisions.rule.min_n:
            err_console.print(escape(pass_text(outcome)), highlight=False)

    def on_notice(self, text: str) -> None:
        if not self.quiet:
            err_console.print(f"[yellow]{escape(text)}[/yellow]", highlight=False)

    def on_record(self, record: RunRecord, label: str, state: StudyProgress) -> None:
        if not state.shown:  # else its line came as it ended in the guest (on_progress)
            self._show(record, label, state, "")

    def on_progress(self, record: RunRecord, label: str, state: StudyProgress) -> None:
        """A run that ended in a guest: shown now, stored when its guest's job ends."""
        self._show(record, label, state, " (in the guest; stored when its job ends)")

    def _show(self, record: RunRecord, label: str, state: StudyProgress, where: str) -> None:
        assert self.task is not None
        status = "ok" if record.status == STATUS_OK else f"FAILED: {record.error}"
        left = state.left
        eta = ("nothing left" if left.runs == 0 else "time left not known yet" if left.unknown == left.runs
               else f"{left.short()} left") + self.later
        # Labels hold "[rw=read ...]", which rich would otherwise take for markup.
        self.progress.update(self.task, advance=1, last=escape(f"{label}: {status}"[:60]), eta=escape(eta))
        if self.plain:
            err_console.print(f"run {label}: {status} ({record.wall_s:.1f} s){where}; {eta}",
                              highlight=False, markup=False)

    def on_waiting(self, text: str | None) -> None:
        """A Dask lab with no worker connected: said, not shown as a stale ETA."""
        if self.task is not None and text:
            self.progress.update(self.task, eta=escape(text))
        if text and (not self.waiting_said_at or (self.plain and time.monotonic() - self.waiting_said_at > 60)):
            err_console.print(f"[yellow]{escape(text)}[/yellow]", highlight=False)
            self.waiting_said_at = time.monotonic()
        if text is None:
            self.waiting_said_at = 0.0


def _open_jobs_executor(executor: str | None, tls: Path | None, insecure: bool, view: _RunProgress) -> Executor:
    """The executor, refused before anything is made; a plaintext lab's warning said."""
    from .executors import open_executor

    jobs_executor = open_executor(executor, tls, insecure)
    if insecure:
        from .executors.dask import DaskExecutor

        if isinstance(jobs_executor, DaskExecutor) and jobs_executor.access.warning():
            err_console.print(f"[yellow]{escape(jobs_executor.access.warning() or '')}[/yellow]", highlight=False)
    if hasattr(jobs_executor, "on_waiting"):  # a Dask lab: no worker connected is said, not a stale ETA
        jobs_executor.on_waiting = view.on_waiting
    return jobs_executor


def _explain_stop(exc: BaseException, results: Path, continue_with: str) -> NoReturn:
    """A study stopped before its end: what is kept, and the command that continues it."""
    if isinstance(exc, ResultsUnwritable):  # a full results disk: what is stored stays, devices are released
        err_console.print(
            f"[red]error:[/red] {escape(str(exc))}\nEvery run stored so far is kept and every mount and device "
            f"was released. Free space in {results} (or make it writable), then continue with "
            f"`{escape(continue_with)}`", highlight=False)
        raise typer.Exit(2) from None
    if isinstance(exc, ExecutorLost):  # the scheduler died: the workers' jobs are stopped, what is stored stays
        err_console.print(
            f"[red]error:[/red] {escape(str(exc))}\nEvery run stored so far is kept. Start the scheduler and its "
            f"workers again, then continue with `{escape(continue_with)}`", highlight=False)
        raise typer.Exit(2) from None
    # Ctrl-C, SIGTERM or SIGHUP: all released by now
    err_console.print(
        f"[yellow]interrupted[/yellow] ({str(exc) or 'Ctrl-C'}): every mount and device was "
        f"released; the runs already stored are kept. Continue with `{escape(continue_with)}`",
        highlight=False)
    raise typer.Exit(130) from None


def _print_outcome(outcome: StudyOutcome, results: Path, quiet: bool, continue_with: str) -> None:
    """The report and where the results are (or, --quiet, the study id); exits 1 when the
    study holds failed runs."""
    if not quiet:
        _print_report(results, outcome.study_id, None)
        console.print(
            f"{counted(outcome.runs_done, 'run')} in {outcome.wall_s:.0f} s ({outcome.runs_failed} failed); "
            f"results in {results.resolve()} (study {outcome.study_id}): "
            f"`fslab report -r {shlex.quote(str(results))}`, "
            f"`fslab export -r {shlex.quote(str(results))} --format csv`", highlight=False, markup=False)
    else:
        print(outcome.study_id)
    if outcome.runs_failed_total:
        # A study with failed runs is not a success, even when it ran to its end.
        err_console.print(
            f"[red]{outcome.runs_failed_total} of {outcome.runs_done + outcome.runs_skipped_as_stored} runs "
            f"failed[/red] (reasons above; "
            f"`{escape(shlex.join(['fslab', 'report', '-r', str(results)]))}` shows them again); re-run them with "
            f"`{escape(continue_with.replace('--resume', '--retry-failed'))}`",
            highlight=False)
        raise typer.Exit(1)


def pass_text(outcome: PassOutcome) -> str:
    """'after pass 4: 12 of 40 cells still repeating (20 precision, 8 verdict stopped);
    pass 5: 12 runs, about 2 min' — or that every cell has stopped, and why."""
    cells = outcome.decisions.cells.values()
    reasons: dict[str, int] = {}
    for c in cells:
        if c.reason is not None:
            reasons[c.reason] = reasons.get(c.reason, 0) + 1
    why = ", ".join(f"{count} on {reason}" for reason, count in sorted(reasons.items(), key=lambda kv: -kv[1]))
    done = outcome.next_pass
    if outcome.runs == 0 and not outcome.decisions.repeating():
        return f"after pass {done}: every cell has stopped ({why})"
    repeating = len(outcome.decisions.repeating())
    return (f"after pass {done}: {repeating} of {len(outcome.decisions.cells)} cells still repeating"
            + (f" ({why} stopped)" if why else "")
            + f"; pass {done + 1}: {outcome.runs} run{'s' * (outcome.runs != 1)}, {outcome.this_pass.short()}")


def _print_report(results: Path, study_id: int | None, metric: list[str] | None, by_host: bool = False) -> None:
    """The report in the terminal, from the same model as --html/--markdown/--json."""
    from .report.outputs import load_report, reports_by_host
    from .report.terminal import host_renderables, render_terminal

    report = load_report(results, study_id, metric)
    # Several hosts (a Dask run): a table per host on request, and what they differ in.
    per_host = reports_by_host(results, study_id, metric) if by_host else []
    for renderable in [*render_terminal(report), *host_renderables(report, per_host)]:
        console.print(renderable)
    if not report.status.startswith("complete"):
        console.print(f"[yellow]{report.runs_stored} of {report.runs_planned} runs stored; continue with "
                      f"`{escape(resume_command(report.source, results, report.quick, []))}`[/yellow]")


@app.command()
def report(
    results: ResultsOpt = DEFAULT_RESULTS,
    study: StudyOpt = None,
    metric: Annotated[Optional[list[str]], typer.Option(
        help="metric to tabulate, e.g. read_clat_p99_ns; repeat it for several (a row per case and metric)")] = None,
    charts: Annotated[Optional[Path], typer.Option(help="write grouped bar charts (PNG, SVG) here")] = None,
    by: Annotated[Optional[str], typer.Option(help="one chart per value of this axis (default: rw)")] = None,
    contrast: Annotated[Optional[list[str]], typer.Option(
        help="ratio of one axis value to another per case and file system, e.g. direct=0/1")] = None,
    traces: Annotated[Optional[Path], typer.Option(help="write the traced runs' Table 1 (CSV), "
                                                   "I/O counts, size CDFs and LBA plots here")] = None,
    html: Annotated[Optional[Path], typer.Option(
        "--html", help="write the report as one self-contained HTML file (charts inline)")] = None,
    markdown: Annotated[Optional[Path], typer.Option("--markdown", help="write the report as Markdown")] = None,
    as_json: Annotated[Optional[Path], typer.Option(
        "--json", help="write the report's sections as JSON ('-': stdout, nothing else printed)")] = None,
    run_id: Annotated[Optional[str], typer.Option(
        "--run", help="show one run whole: parameters, metrics, provenance, artifacts, raw output "
        "(a run id from `fslab export`, or its artifact folder name)")] = None,
    by_host: Annotated[bool, typer.Option("--by-host", help="one table per host that ran runs (a study run with --executor tls://)")] = False,
) -> None:
    """Comparison table of a stored study: workloads x file systems, mean ± 95% CI, n."""
    if run_id is not None:
        from .report.run_view import render_run, run_view

        for renderable in render_run(run_view(results, run_id, study)):
            console.print(renderable, highlight=False)
        return
    if html or markdown or as_json:
        from .report.outputs import write_outputs

        with trace_progress("reading traces for the report") as progress:
            lines = write_outputs(results, study, metric, html=html, markdown=markdown, as_json=as_json,
                                  progress=progress)
        for line in lines:
            err_console.print(line, highlight=False)
        if str(as_json) == "-":
            return
    _print_report(results, study, metric, by_host)
    from .report.outputs import full_metric_names, load_study

    row, runs, cells = load_study(results, study)
    full = full_metric_names(metric, runs, row.id)
    each: list[str | None] = list(full) if full else [None]  # None: each cell's primary metric
    for text in contrast or []:
        for name in each:
            _print_contrast(runs, cells, text, name)
    if charts is not None:
        from .report.charts import write_charts

        axis = by or _default_chart_axis(cells)
        written = [path for name in each for path in write_charts(runs, cells, charts, by=axis, metric=name)]
        console.print(f"wrote {len(written) // 2} charts (PNG and SVG) to {charts}")
    if traces is not None:
        _write_trace_figures(results, runs, cells, traces)


def _default_chart_axis(cells: list[StoredCell]) -> str | None:
    """The first axis the study varies that a workload of its cells groups charts by."""
    from .workloads import WORKLOADS

    for cell in cells:
        kind = cell["workload_kind"]
        axis = WORKLOADS.get(kind).chart_axis if kind in WORKLOADS else None
        if axis is not None and any(axis in c["axes"] for c in cells):
            return axis
    return None


@contextmanager
def trace_progress(description: str) -> Iterator[Callable[[int, int, str], None]]:
    """A counter with ETA on stderr while trace files are read (big traces take a while);
    silent when stderr is not a terminal."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(TextColumn(description), BarColumn(), MofNCompleteColumn(), TextColumn("ETA"),
                   TimeRemainingColumn(), TextColumn("{task.fields[what]}"), console=err_console,
                   disable=not err_console.is_terminal, transient=True)
    task = bar.add_task(description, total=None, what="")

    def update(done: int, total: int, what: str) -> None:
        bar.update(task, completed=done, total=total, what=escape(what[:50]))

    with bar:
        yield update


def _write_trace_figures(results: Path, runs: list[StoredRun], cells: list[StoredCell], out: Path) -> None:
    from .report.terminal import section_renderable
    from .report.trace_figures import write_trace_figures

    with trace_progress("reading traces") as progress:
        done = write_trace_figures(results, runs, cells, out, progress)
    for table in done.tables:
        console.print(section_renderable(table))
    for path in done.missing:
        console.print(f"[yellow]trace file missing, run left out: {path}[/yellow]", highlight=False)
    if not done.tables:
        raise FslabError(f"no traced runs with a trace file in this study: nothing written to {out}")
    console.print(f"wrote {len(done.paths)} files to {out}: " + ", ".join(p.name for p in done.paths))


def _print_contrast(runs: list[StoredRun], cells: list[StoredCell], text: str, metric: str | None) -> None:
    from rich.table import Table

    from .analysis.contrasts import axis_values_text, contrasts, parse_contrast
    from .report.units import fmt

    try:
        axis, a, b = parse_contrast(text)
    except ValueError as exc:
        raise FslabError(f"--contrast: {exc}") from None
    left_out: list[str] = []
    try:
        rows = contrasts(runs, cells, axis, a, b, metric, left_out)
    except ValueError as exc:
        raise FslabError(f"--contrast {text}: {exc}") from None
    if not rows:
        raise FslabError(f"--contrast {text}: " + (
            f"no pair of cells that differs only in {axis} = {a} vs {b} has numbers on both sides: "
            + " | ".join(left_out) if left_out
            else f"no pair of cells differs only in {axis} = {a} vs {b} ({axis_values_text(cells, axis)})"))
    filesystems = list(dict.fromkeys(r.filesystem for r in rows))
    table = Table(title=f"ratio {axis}={a} / {axis}={b} of {metric or 'the primary metric'}: "
                  "ratio of means [95% CI, delta method]", title_justify="left")
    table.add_column("workload")
    table.add_column("case")
    for fs in filesystems:
        table.add_column(fs, justify="right")
    grouped: dict[tuple[str, str], dict[str, str]] = {}
    for r in rows:
        res = r.result
        ci = f" [{fmt(res.low)}–{fmt(res.high)}]" if res.low is not None and res.high is not None else ""
        grouped.setdefault((r.workload, r.case), {})[r.filesystem] = (
            f"{fmt(res.ratio)}x{ci} (n={res.n_numerator}/{res.n_denominator})")
    for (workload, case), by_fs in grouped.items():
        table.add_row(workload, case, *[by_fs.get(fs, "—") for fs in filesystems])
    console.print(table)
    for note in left_out:
        console.print(f"[yellow]left out: {escape(note)}[/yellow]", highlight=False)


@app.command("list")
def list_(
    results: ResultsOpt = DEFAULT_RESULTS,
    presets: Annotated[bool, typer.Option(help="list the shipped presets instead")] = False,
) -> None:
    """Stored studies (or, with --presets, the shipped study presets)."""
    if presets:
        from .study import load_spec, preset_names

        for name in preset_names():
            spec, _, _ = load_spec(name)
            console.print(f"{name:14} {spec.study.name}")
        return
    from datetime import datetime

    from rich.table import Table

    from .store import Store
    from .study_lock import shown_status

    with Store(results, read_only=True) as store:
        rows = store.studies()
        counts = {r.id: store.run_counts(r.id) for r in rows}
    table = Table(title=f"studies in {results}", title_justify="left")
    for col in ("id", "name", "source", "started", "runs stored / planned", "status"):
        table.add_column(col)
    for r in rows:
        started = datetime.fromtimestamp(r.created_at).strftime("%Y-%m-%d %H:%M")
        table.add_row(str(r.id), r.name + (" (quick)" if r.quick else ""), r.source, started,
                      _stored_of_planned(counts[r.id][0], r.planned_runs, "auto" in r.facts, r.status),
                      shown_status(r.status, results, *counts[r.id]))
    console.print(table)


def _stored_of_planned(stored: int, planned: int, auto: bool, status: str) -> str:
    """'12 / 36'; an auto study plans its maximum: '19 (auto, at most 24)'."""
    if not auto:
        return f"{stored} / {planned}"
    return f"{stored} (auto{', done' if status == 'complete' else ''}, at most {planned})"


@app.command()
def export(
    results: ResultsOpt = DEFAULT_RESULTS,
    study: StudyOpt = None,
    format: Annotated[str, typer.Option("--format", "-f", help="json, csv or parquet")] = "json",
    output: Annotated[Optional[Path], typer.Option(
        "--out", "--output", "-o", help="file (default: stdout; parquet needs a file)")] = None,
) -> None:
    """One record per run: study, cell parameters, file system, workload, repetition,
    status, error, provenance and metrics (with units), as JSON, CSV or typed Parquet. In
    CSV, a flag is `true`/`false` and a list or table is JSON, as in the JSON export; the
    `param.NAME` columns hold the parameters as the workload's tool read them (fio's
    `direct` as 1), the `axis.NAME` columns each run's axis values as the study file wrote
    them (`true`), which labels and `--contrast` use."""
    from .export import EXPORTERS
    from .store import Store

    try:
        exporter = EXPORTERS.get(format)
    except KeyError as exc:
        raise FslabError(f"--format: {exc.args[0]}") from None
    if output is None and format == "parquet":
        raise FslabError("--format parquet writes a binary file: name it with --out FILE (e.g. --out runs.parquet)")
    with Store(results, read_only=True) as store:
        row = store.study(study)
        data = exporter(row, store.runs(row.id))
    if output:
        if isinstance(data, bytes):
            output.write_bytes(data)
        else:
            output.write_text(data)
        err_console.print(f"wrote {output}")
    else:
        sys.stdout.write(data if isinstance(data, str) else data.decode())


@app.command()
def doctor() -> None:
    """Which tools and kernel features are present; how to install what is missing."""
    from rich.table import Table

    from .doctor import run_checks

    table = Table(title="fslab doctor", title_justify="left")
    for col in ("check", "status", "detail", "needed for", "fix"):
        table.add_column(col)
    checks = run_checks()
    for c in checks:
        table.add_row(c.name, "[green]ok[/green]" if c.ok else "[red]missing[/red]", c.detail,
                      c.needed_for, "" if c.ok else (c.fix or ""))
    console.print(table)
    missing = [c for c in checks if not c.ok]
    console.print(f"{len(checks) - len(missing)} of {len(checks)} checks pass.")


@app.command()
def cleanup(
    dry_run: Annotated[bool, typer.Option(help="only say what would be released")] = False,
    under: Annotated[Optional[Path], typer.Option(
        help="only what belongs to images below this folder (e.g. a results directory)")] = None,
) -> None:
    """Release mounts, loop devices, images and cgroups left by a killed fslab."""
    from .cleanup import cleanup as do_cleanup

    done = do_cleanup(dry_run=dry_run, under=under)
    for line in done:
        console.print(("would " if dry_run else "") + line)
    if not done:
        console.print("nothing to clean up: no fslab process that died left anything behind")


job_app = typer.Typer(no_args_is_help=True, help="Execute one job (a file system instance and its runs).")
app.add_typer(job_app, name="job")


@job_app.command("run")
def job_run(
    job_file: Annotated[Path, typer.Argument(help="a job file (from `fslab plan STUDY --jobs DIR`)")],
    out: Annotated[Path, typer.Option(help="where records.jsonl and the runs' artifacts go")],
    work: Annotated[Optional[Path], typer.Option(help="images and mount points (default: OUT/work)")] = None,
    allow_device: Annotated[Optional[list[str]], typer.Option(
        "--destroy-data-on", help="confirm a real block device named by the job")] = None,
) -> None:
    """Run one job: the same entry the host backend, a guest and a remote worker use.
    Writes OUT/records.jsonl, one record per run as it ends, and OUT/runs/<run>/."""

    from .job.entry import load_job, run_job
    from .job.folder import JobFolder
    from .signals import install_handlers

    job = load_job(job_file)
    if allow_device:
        job = replace(job, grant=replace(
            job.grant, allowed=job.grant.allowed | frozenset(allow_device)))
    install_handlers()
    counts = {"ok": 0, "failed": 0}

    def on_record(record: RunRecord) -> None:
        counts["ok" if record.status == STATUS_OK else "failed"] += 1

    # Absolute: tools run in the runs' folders (fio's cwd is its artifact folder).
    folder = JobFolder(out.resolve())
    run_job(job, folder, (work or out / "work").resolve(), on_record)
    err_console.print(f"job {job.id}: {counted(counts['ok'], 'run')} ok, {counts['failed']} failed; "
                      f"records in {folder.records_file}", highlight=False)


@job_app.command("age", hidden=True)
def job_age(
    job_file: Annotated[Path, typer.Argument(help="a job whose file system has an aging option")],
    out: Annotated[Path, typer.Option(help="where aging.json (or aging-error.txt) goes")],
    work: Annotated[Optional[Path], typer.Option(help="mount points (default: OUT/work)")] = None,
) -> None:
    """Make and age the job's file system on its device, then leave it unmounted: the
    guest backend keeps that disk as the aged image every repetition copies."""
    from .job.entry import age_job, load_job
    from .job.folder import JobFolder
    from .signals import install_handlers

    install_handlers()
    report = age_job(load_job(job_file), JobFolder(out.resolve()), (work or out / "work").resolve())
    data = "" if report.data_fraction is None else f"{report.data_fraction:.1%} of the device as file data, "
    err_console.print(f"aged to {data}{report.utilisation_reached:.1%} of the blocks in use (statfs) "
                      f"in {report.wall_s:.1f} s", highlight=False)


def _register_optional_commands() -> None:
    """Command families that live in their own modules."""
    import importlib

    for module in ("fslab.cli_simulate", "fslab.cli_trace", "fslab.cli_guest", "fslab.cli_compare",
                   "fslab.cli_worker", "fslab.cli_scheduler", "fslab.cli_lab", "fslab.cli_models"):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue
        mod.register(app)


_register_optional_commands()


def main() -> None:
    from .pipes import install

    install()  # a reader that goes away (`| head`) costs the output, never the study
    try:
        app()
    except FslabError as exc:
        err_console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted[/yellow]")
        sys.exit(130)


if __name__ == "__main__":
    main()
