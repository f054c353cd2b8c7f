"""The runner: turns a study file into stored results. It plans, checks that everything
needed is present before anything is written, hands each job to its backend in order,
stores each record as it arrives (moving its artifacts into place), and resumes an
interrupted study without repeating a run. It knows no concrete backend or executor."""

from __future__ import annotations

import contextlib
import functools
import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec

from .backends import choose_backend
from .cleanup import release_before_start
from .datarecords import replace
from .errors import STUDY_LEVEL_ERRNOS, ExecutorLost, FslabError, ResultsUnwritable
from .estimate import Countdown, TimeEstimate, TimeModel
from .executors import Executor, open_executor
from .identity import case_key, input_digests, retry_plan, spec_changes, study_digest, what_changed
from .job.folder import JobFolder
from .jobdata.model import Cell, Grant, Job
from .jobdata.record import RunRecord
from .plan import Plan, make_plan
from .preflight import check_plan, device_identity
from .provenance import host_facts
from .resume_hint import resume_command
from .signals import install_handlers
from .spec import StudySpec
from .stopping import Decisions, cell_infos, decide
from .stopping_rule import StoppingRule
from .store import DB_NAME, Store, ensure_results_dir
from .stored import STATUS_OK, StoredCell, StudyFacts, StudyRevision, StudyRow
from .study import load_spec
from .study_lock import study_lock
from .units import utc_text, value_text

WORK_DIR_NAME = ".work"
JOBS_DIR_NAME = ".jobs"  # each job's folder while it runs


@dataclass(frozen=True)
class StudyOutcome:
    study_id: int
    results_dir: Path
    runs_done: int  # runs executed now
    runs_failed: int  # of those, failed
    runs_skipped_as_stored: int
    plan: Plan
    wall_s: float
    runs_failed_total: int = 0  # failed runs the study holds now (earlier passes included)
    runs_retried: int = 0  # failed runs moved to history by --retry-failed

    @property
    def runs_planned(self) -> int:
        """Runs the plan holds (an auto study's: its maximum)."""
        return len(self.plan.runs)


def _changed_study_error(flag: str, stored: StudyRow, source: str, text: str, inputs: dict[str, str],
                         results_dir: Path, why: str = "") -> FslabError:
    changed = what_changed(stored.spec_text, stored.facts.get("inputs", {}), text, inputs) or [
        "its identity (written by another fslab?)"]
    revisions = stored.facts.get("revisions", [])
    made = ("was made from other inputs" if not revisions else
            f"stands at the text {revisions[-1].get('by', '--retry-failed')} adopted at "
            f"{utc_text(revisions[-1]['at'])}, not this one")
    return FslabError(
        f"{flag}: study {stored.id} of {source} in {results_dir} {made}: changed since: "
        f"{'; '.join(changed)}. {why or 'Continuing it would mix runs of two definitions in one cell.'} Restore the "
        f"file(s) to continue study {stored.id}, or run without {flag} to start a new study (study "
        f"{stored.id} stays as it is)")


def _adopt_revision(store: Store, stored: StudyRow, plan: Plan, text: str, inputs: dict[str, str], digest: str,
                    source: str, results_dir: Path, on_notice: Callable[[str], None] | None) -> StudyRow:
    """--retry-failed of a study whose file changed: adopt the change when it touches
    only cases whose runs all failed (a timeout, a memory limit), keeping both
    definitions; else refuse, saying what changed."""
    check = retry_plan(store.cells(stored.id), store.ok_cell_ids(stored.id), plan.cells)
    if check.refusal is not None:
        raise _changed_study_error("--retry-failed", stored, source, text, inputs, results_dir,
                                   why=f"{check.refusal[0].upper()}{check.refusal[1:]}.")
    changed = what_changed(stored.spec_text, stored.facts.get("inputs", {}), text, inputs)
    revision: StudyRevision = {"at": time.time(), "spec_text": stored.spec_text, "spec_hash": stored.spec_hash,
                               "inputs": stored.facts.get("inputs", {}), "changed": changed,
                               "replaced_cells": {old: new.id for old, new in check.replaced.items()}}
    store.revise_study(stored.id, spec_text=text, spec_hash=digest, new_cells=list(check.replaced.values()),
                       revision=revision)
    if on_notice:
        on_notice(f"--retry-failed: study {stored.id} changed since it was stored ({'; '.join(changed)}); the "
                  "change touches only cases whose runs failed, so they run again under it (both "
                  "definitions are kept with the study)")
    return store.study(stored.id)


P = ParamSpec("P")


def _leaves_nothing_when_refused(run: Callable[P, StudyOutcome]) -> Callable[P, StudyOutcome]:
    """A results directory the run made is removed again when the study is refused before
    anything was stored (a check on this host, an executor out of reach): a refusal
    leaves nothing. Keeps the run's own signature, so its callers stay type-checked."""

    @functools.wraps(run)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> StudyOutcome:
        results_dir = Path(kwargs["results_dir"])  # type: ignore[arg-type]  # keyword-only
        made = not results_dir.exists()
        try:
            return run(*args, **kwargs)
        except FslabError:
            if made:
                _remove_if_empty(results_dir)
            raise

    return guarded


def _remove_if_empty(results_dir: Path) -> None:
    """Remove a results directory that holds no stored study (only what a refused run made:
    an empty store, the lock file, the work directory)."""
    try:
        if (results_dir / DB_NAME).exists():
            with Store(results_dir, read_only=True) as store:
                if store.studies():
                    return
    except FslabError:  # no store or an unreadable one: leave it to the user
        return
    shutil.rmtree(results_dir, ignore_errors=True)


def _refuse_resuming_another(store: Store, source: str, quick: bool, results_dir: Path) -> None:
    """--resume of a study file of which the folder holds nothing, beside an unfinished
    study of another file: resuming means that one, never a new study of this file."""
    if store.latest_of_source(source, quick) is not None:
        return
    others = [s for s in store.studies() if s.status != "complete" and (s.source, s.quick) != (source, quick)]
    if not others:
        return
    other = others[-1]
    stored, _ = store.run_counts(other.id)
    raise FslabError(
        f"--resume: {results_dir} holds no study of {source}{' (--quick)' if quick else ''}; the unfinished "
        f"study there is study {other.id} ({other.name!r}, from {other.source}, {stored} of "
        f"{other.planned_runs} runs stored). To continue it: "
        f"`{resume_command(other.source, results_dir, other.quick, [])}`; to start {source} as a "
        f"new study, run it without --resume (or in a results folder of its own)")


def _refuse_other_cells(store: Store, previous: StudyRow, plan: Plan, results_dir: Path, flag: str) -> None:
    """A stored study is continued only where this fslab plans its cells under the ids
    they were stored with: a run is matched to its stored result by cell id, so a cell
    defined otherwise now (another backend on this kernel, an fslab that names cells
    differently, a file system skipped when the study started) would be measured again
    beside results the report could not join to it."""
    stored_cells = store.cells(previous.id)
    stored = {c["id"] for c in stored_cells}
    unknown = [c for c in plan.cells if c.id not in stored]
    if not unknown:
        return
    by_case = {case_key(c["filesystem"], c["workload"], c["axes"]): c for c in stored_cells}
    said = [f"{c.filesystem} {c.label} (cell {c.id}): "
            f"{_what_differs(by_case.get(case_key(c.filesystem, c.workload, c.axes)), c)}" for c in unknown[:3]]
    more = f"; and {len(unknown) - 3} more" if len(unknown) > 3 else ""
    host, here = previous.host, host_facts()
    where = (f"It was started here, with this fslab ({here.get('hostname')}, kernel {here.get('kernel')}, fslab "
             f"{here.get('fslab')}): what differs is what planning reads on this host now (a kernel module, "
             "a tool), or its stored cells were changed; undo that, or"
             if all(host.get(k) == here.get(k) for k in ("hostname", "kernel", "fslab", "fslab_core")) else
             f"It was started on {host.get('hostname')} (kernel {host.get('kernel')}) with fslab "
             f"{host.get('fslab')} (core {host.get('fslab_core')}): finish it there, or")
    raise FslabError(
        f"{flag}: {len(unknown)} of the {len(plan.cells)} cells this fslab plans for {_source_name(previous)} "
        f"are not stored under the ids study {previous.id} in {results_dir} has: {'; '.join(said)}{more}. "
        f"Their runs would be measured again, beside stored results the report could not join to them. "
        f"{where} run without {flag} to start a new study (study {previous.id} stays as it is)")


def _source_name(study: StudyRow) -> str:
    return study.source if study.source.startswith("preset ") else Path(study.source).name


def _what_differs(stored: StoredCell | None, cell: Cell) -> str:
    """'backend: host -> guest' (or 'defined alike, stored under another id'): what of a
    cell's definition is not what was stored for the same entry and case."""
    if stored is None:
        return "not in the stored study (a file system skipped when it started, which can run now?)"
    was: dict[str, Any] = dict(stored)
    now, changed = cell.to_json(), []
    for key in sorted(set(now) | set(was)):
        old, new = was.get(key), now.get(key)
        if key == "id" or old == new:
            continue
        if key == "inputs":  # file texts: too long to show
            changed.append("the texts of its input files")
        elif isinstance(old, dict) and isinstance(new, dict):
            changed += [f"{key}.{k}: {value_text(old.get(k))} -> {value_text(new.get(k))}"
                        for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
        else:
            changed.append(f"{key}: {value_text(old)} -> {value_text(new)}")
    return ", ".join(changed) if changed else "defined alike, stored under another id"


@dataclass(frozen=True)
class _PlannedStudy:
    """A study file read and planned: what every later step of a run needs."""

    spec: StudySpec
    source: str
    text: str
    study_dir: Path
    plan: Plan
    digest: str  # the study's identity (text, quick, cells)
    inputs: dict[str, str]  # digests of the files its workloads read
    allow_exec: bool

    def with_seed(self, seed: int) -> _PlannedStudy:
        """The same study in a stored study's order (a resumed or retried one's seed)."""
        if seed == self.plan.seed:
            return self
        plan = make_plan(self.spec, backends=choose_backend, quick=self.plan.quick, seed=seed, source=self.source,
                         study_dir=self.study_dir, allow_exec=self.allow_exec)
        return replace(self, plan=plan)


def _plan_study(study: str, quick: bool, allow_exec: bool) -> _PlannedStudy:
    """Read, check and plan a study file or preset; input files (a fio job file) are read
    here, once, and travel in the jobs. A refused study leaves nothing."""
    spec, source, text = load_spec(study, allow_exec=allow_exec)
    study_dir = (Path(source).parent if Path(source).is_file() else Path.cwd()).resolve()
    plan = make_plan(spec, backends=choose_backend, quick=quick, source=source, study_dir=study_dir,
                     allow_exec=allow_exec)
    return _PlannedStudy(spec, source, text, study_dir, plan, study_digest(text, quick, plan.cells),
                         input_digests(plan.cells), allow_exec)


def _study_to_retry(store: Store, planned: _PlannedStudy, results_dir: Path,
                    on_notice: Callable[[str], None] | None) -> StudyRow:
    """--retry-failed: the newest study of this definition, or of this file when its
    change touches only cases whose runs all failed (adopted as a revision)."""
    quick = planned.plan.quick
    previous = store.latest(planned.digest)
    if previous is not None:
        return previous
    other = store.latest_of_source(planned.source, quick)
    if other is None:
        raise FslabError(f"--retry-failed: no run of {planned.source}{' with --quick' if quick else ''} in "
                         f"{results_dir} to retry; run it without --retry-failed to start it")
    return _adopt_revision(store, other, planned.plan, planned.text, planned.inputs, planned.digest,
                           planned.source, results_dir, on_notice)


# Fields of a study file that name or describe it and change no run.
_WORDING_FIELDS = frozenset({"study.name"})


def _touches_no_run(store: Store, stored: StudyRow, planned: _PlannedStudy) -> bool:
    """The file changed only in its name, comments or layout: the same inputs, the same
    cells under the same ids, every other field as it was."""
    fields = {change.split(":", 1)[0] for change in spec_changes(stored.spec_text, planned.text)}
    return (stored.facts.get("inputs", {}) == planned.inputs and fields <= _WORDING_FIELDS
            and {c["id"] for c in store.cells(stored.id)} == {c.id for c in planned.plan.cells})


def _adopt_wording(store: Store, stored: StudyRow, planned: _PlannedStudy,
                   on_notice: Callable[[str], None] | None) -> StudyRow:
    """Continue ``stored`` under the reworded file: its new text (and name) become the
    study's, the old text kept as a revision."""
    changed = what_changed(stored.spec_text, stored.facts.get("inputs", {}), planned.text, planned.inputs)
    revision: StudyRevision = {"at": time.time(), "spec_text": stored.spec_text, "spec_hash": stored.spec_hash,
                               "inputs": stored.facts.get("inputs", {}), "changed": changed, "replaced_cells": {},
                               "by": "--resume"}
    store.revise_study(stored.id, spec_text=planned.text, spec_hash=planned.digest, new_cells=[],
                       revision=revision, name=planned.spec.study.name)
    if on_notice:
        on_notice(f"--resume: study {stored.id}'s file changed since it was stored ({'; '.join(changed)}); the "
                  "change touches no run, so the study goes on under it (the earlier text is kept with it)")
    return store.study(stored.id)


def _check_nothing_to_resume(store: Store, planned: _PlannedStudy, results_dir: Path,
                             on_notice: Callable[[str], None] | None) -> StudyRow | None:
    """--resume with no unfinished study of this definition: the unfinished study of this
    file when the file's change touches no run (its name, comments, layout), or None when
    it may start anew (interrupted before anything was stored, e.g. in preflight); else
    raises, saying what is stored instead (another definition of the file, a finished
    study, another file's unfinished study)."""
    source, quick, digest = planned.source, planned.plan.quick, planned.digest
    other = store.latest_of_source(source, quick, unfinished=True)
    if other is not None and other.spec_hash != digest:
        if _touches_no_run(store, other, planned):
            return _adopt_wording(store, other, planned, on_notice)
        raise _changed_study_error("--resume", other, source, planned.text, planned.inputs, results_dir)
    if store.latest(digest) is not None:
        raise FslabError(
            f"--resume: no unfinished run of {source}{' with --quick' if quick else ''} in {results_dir}; "
            "run it without --resume to start it (or --retry-failed to re-run failed runs "
            "of a finished one)"
        )
    finished = store.latest_of_source(source, quick)
    if finished is not None and finished.spec_hash != digest:
        changed = what_changed(finished.spec_text, finished.facts.get("inputs", {}), planned.text, planned.inputs)
        raise FslabError(
            f"--resume: the newest study of {source} in {results_dir} (study {finished.id}, "
            f"{finished.status}) was made from other inputs: changed since: "
            f"{'; '.join(changed) or 'its identity'}. Nothing of this definition is stored to resume: "
            f"run without --resume to start a new study (study {finished.id} stays as it is)")
    _refuse_resuming_another(store, source, quick, results_dir)
    return None


def _study_to_continue(store: Store, planned: _PlannedStudy, results_dir: Path, resume: bool, retry_failed: bool,
                       on_notice: Callable[[str], None] | None, devices: Iterable[str] = (),
                       allow_exec: bool = False) -> StudyRow | None:
    """The stored study this invocation continues (None: a new study). ``devices`` and
    ``allow_exec``, as this invocation gave them, go into the command a notice prints."""
    if retry_failed:
        return _study_to_retry(store, planned, results_dir, on_notice)
    if not resume:
        unfinished = store.resumable(planned.digest)
        if unfinished is not None and on_notice:
            stored, _ = store.run_counts(unfinished.id)
            again = resume_command(planned.source, results_dir, planned.plan.quick, sorted(devices), allow_exec)
            on_notice(f"study {unfinished.id} of this study file is unfinished ({stored} of "
                      f"{unfinished.planned_runs} runs stored, {unfinished.status}): this starts a new study "
                      f"beside it; `{again}` continues "
                      "that one instead")
        return None
    previous = store.resumable(planned.digest)
    if previous is None:
        previous = _check_nothing_to_resume(store, planned, results_dir, on_notice)
    return previous


def _open_study(store: Store, planned: _PlannedStudy, previous: StudyRow | None, allowed_devices: frozenset[str],
                retry_failed: bool, results_dir: Path) -> tuple[int, Grant, int]:
    """Check the plan on this host, then reopen the stored study (its failed runs retired
    when retrying) or create it: (study id, what the jobs are granted, runs retired)."""
    plan = planned.plan
    check_plan(plan, source=planned.source, host=True, probe_dir=results_dir / WORK_DIR_NAME)
    identity = previous.facts.get("device_identity") if previous else None
    identity = device_identity(plan, Grant(allowed_devices, identity), resuming=previous is not None)
    grant = Grant(allowed_devices, identity)
    if previous is not None:
        store.set_status(previous.id, "running")
        return previous.id, grant, store.retire_failed(previous.id) if retry_failed else 0
    facts: StudyFacts = {"device_identity": identity, "inputs": planned.inputs, "paper": planned.spec.study.paper}
    study_id = store.create_study(name=planned.spec.study.name, source=planned.source, spec_text=planned.text,
                                  spec_hash=planned.digest, plan=plan, host=host_facts(), facts=facts)
    return study_id, grant, 0


@dataclass
class _Execution:
    """One invocation's runs of a study: hands jobs to the executor, stores each record as
    it arrives and keeps the count and the time left."""

    store: Store
    study_id: int
    plan: Plan
    executor: Executor
    results_dir: Path
    countdown: Countdown
    on_record: Callable[[RunRecord, str, StudyProgress], None] | None
    on_progress: Callable[[RunRecord, str, StudyProgress], None] | None = None
    done: int = 0
    failed: int = 0
    cells: dict[str, Cell] = field(init=False)  # id -> cell, for each record's label
    shown: set[tuple[str, int]] = field(default_factory=set)  # runs shown, not stored yet

    def __post_init__(self) -> None:
        self.cells = {c.id: c for c in self.plan.cells}

    @property
    def jobs_dir(self) -> Path:
        return self.results_dir / JOBS_DIR_NAME / f"study-{self.study_id}"

    def emit(self, record: RunRecord, folder: JobFolder) -> None:
        self.store.add_record(self.study_id, record, source_dir=folder.path)
        self.done += 1
        self.failed += record.status != STATUS_OK
        cell = self.cells[record.cell_id]
        key = (record.cell_id, record.repetition)
        shown = key in self.shown
        if shown:
            self.shown.discard(key)  # counted in the time left when it was shown
        else:
            self.countdown.record(cell, record)
        if self.on_record:
            self.on_record(record, _label(cell, record), StudyProgress(self.done, self.countdown.left(), shown))

    def show(self, record: RunRecord, folder: JobFolder) -> None:
        """A run that ended where its record is stored only when its job ends (a guest):
        counted in the time left and handed to ``on_progress`` now, stored by ``emit`` later."""
        key = (record.cell_id, record.repetition)
        if key in self.shown or self.on_progress is None:
            return
        self.shown.add(key)
        cell = self.cells[record.cell_id]
        self.countdown.record(cell, record)
        self.on_progress(record, _label(cell, record), StudyProgress(self.done, self.countdown.left(), True))

    def execute(self, todo: list[Job]) -> None:
        self.countdown.start(todo, time.time())
        try:
            self.executor.run(todo, self.jobs_dir, self.results_dir / WORK_DIR_NAME, self.emit,
                              self.show if self.on_progress else None)
        except OSError as exc:  # writing a job's folder in the results directory
            if exc.errno not in STUDY_LEVEL_ERRNOS:
                raise
            raise ResultsUnwritable(f"cannot write in {self.results_dir}: {exc.strerror or exc}") from exc

    def run(self, grant: Grant, stored: set[tuple[str, int]],
            on_start: Callable[[Plan, int, int, TimeEstimate], None] | None,
            on_pass: Callable[[PassOutcome], None] | None) -> None:
        """Every run not stored yet: all at once, or pass after pass for an auto study."""
        plan, estimate = self.plan, self.countdown.model.estimate
        if plan.auto is None:
            todo = _jobs_to_do(plan.jobs, stored, grant)
            if on_start:
                on_start(plan, self.study_id, sum(len(j.runs) for j in todo), estimate(todo))
            self.execute(todo)
            return
        if on_start:
            first = _jobs_to_do(plan.jobs, stored, grant, passes=range(plan.auto.min_n))
            on_start(plan, self.study_id, sum(len(j.runs) for j in first), estimate(first))
        _run_passes(self.store, self.study_id, plan, plan.auto, grant, self.execute, self.countdown, on_pass)


def _label(cell: Cell, record: RunRecord) -> str:
    return f"{cell.filesystem} {cell.label} #{record.repetition + 1}"


def _mark_stopped(store: Store, study_id: int, new: bool, exc: BaseException) -> None:
    """A study that stopped on an error or a signal: forgotten when it is new and was
    refused before its first run (the executor's scheduler out of reach, a machine class
    no worker offers), else marked interrupted so it can be resumed."""
    with contextlib.suppress(FslabError):  # a full disk may refuse this too; resume still works
        refused = isinstance(exc, FslabError) and not isinstance(exc, (ExecutorLost, ResultsUnwritable))
        if new and refused and not store.stored_runs(study_id):
            store.forget_study(study_id)
        else:
            store.set_status(study_id, "interrupted")


@_leaves_nothing_when_refused
def run_study(
    study: str,
    *,
    results_dir: Path,
    quick: bool = False,
    resume: bool = False,
    retry_failed: bool = False,
    allowed_devices: frozenset[str] = frozenset(),
    allow_exec: bool = False,
    on_start: Callable[[Plan, int, int, TimeEstimate], None] | None = None,
    on_record: Callable[[RunRecord, str, StudyProgress], None] | None = None,
    executor: str | Executor | None = None,
    on_notice: Callable[[str], None] | None = None,
    on_pass: Callable[[PassOutcome], None] | None = None,
    on_progress: Callable[[RunRecord, str, StudyProgress], None] | None = None,
) -> StudyOutcome:
    """Run (or resume) a study. ``retry_failed``: continue the newest study of this file
    and run its failed runs again (their failures stay in the store as history).
    ``on_start(plan, study_id, runs to do, their time)``, ``on_record(record, label,
    progress)`` and, for ``repetitions = "auto"``, ``on_pass(outcome)`` after each pass let
    the CLI draw progress with an estimate of the time left (fslab.estimate);
    ``on_progress(record, label, progress)`` shows a run that ended in a guest before its
    job ends (its record is stored, and handed to ``on_record`` with ``progress.shown``
    set, when the job ends);
    ``on_notice(text)`` says what was done besides runs (leftovers of a dead earlier run
    released); the runner prints nothing. ``executor``: ``local``
    (default), a Dask scheduler's URL (fslab.executors.open_executor), or an executor
    already opened (the CLI's, with its TLS files)."""
    started = time.monotonic()
    # A malformed or plaintext URL is refused before anything is made.
    jobs_executor = open_executor(executor) if executor is None or isinstance(executor, str) else executor
    install_handlers()  # before preflight too: its scratch images are released on SIGTERM
    planned = _plan_study(study, quick, allow_exec)
    ensure_results_dir(results_dir)
    # Mount points are compared with /proc/mounts, which holds canonical paths.
    results_dir = results_dir.resolve()
    with study_lock(results_dir), Store(results_dir) as store:
        # A killed earlier run may have left its mount, loop device or a workload still
        # running in here: release it (or refuse to measure beside a live one) first.
        for line in release_before_start(results_dir):
            if on_notice:
                on_notice(f"released: {line}")
        previous = _study_to_continue(store, planned, results_dir, resume, retry_failed, on_notice,
                                      allowed_devices, allow_exec)
        if previous is not None:
            planned = planned.with_seed(previous.seed)  # the stored study's order
            _refuse_other_cells(store, previous, planned.plan, results_dir,
                                "--retry-failed" if retry_failed else "--resume")
        study_id, grant, retried = _open_study(store, planned, previous, allowed_devices, retry_failed, results_dir)
        if retry_failed and not retried and on_notice:
            on_notice(f"--retry-failed: study {study_id} holds no failed run to run again")
        execution = _Execution(store, study_id, planned.plan, jobs_executor, results_dir,
                               Countdown(TimeModel(store.history(), study_id,
                                                   guests_kept=jobs_executor.keeps_guests_booted)),
                               on_record, on_progress)
        _recover_records(store, study_id, execution.jobs_dir)
        stored = store.stored_runs(study_id)
        try:
            execution.run(grant, stored, on_start, on_pass)
        except BaseException as exc:
            _mark_stopped(store, study_id, previous is None, exc)
            raise
        store.set_status(study_id, "complete")
        shutil.rmtree(execution.jobs_dir, ignore_errors=True)
        failed_total = store.failed_count(study_id)
    return StudyOutcome(study_id, results_dir, execution.done, execution.failed, len(stored), planned.plan,
                        time.monotonic() - started, failed_total, retried)


@dataclass(frozen=True)
class StudyProgress:
    """Where a running study stands, for whoever draws progress: runs stored by this
    invocation (a run shown as it ended in a guest counts when it is stored), and the time
    the runs handed out so far still need (an auto study's later passes are not in it:
    ``PassOutcome`` says how many at most)."""

    done: int
    left: TimeEstimate
    shown: bool = False  # this run was handed to on_progress already, when it ended


@dataclass(frozen=True)
class PassOutcome:
    """An auto study after a pass: which pass comes next, what was decided, the runs and
    time of that pass, and at most how long further passes could take."""

    next_pass: int  # from 0
    passes_max: int
    decisions: Decisions
    runs: int  # runs of the next pass still to make (0: the study is done)
    this_pass: TimeEstimate
    at_most_later: TimeEstimate  # every cell still repeating kept on to max_repetitions


def _jobs_to_do(jobs: Sequence[Job], stored: set[tuple[str, int]], grant: Grant, *,
                passes: Iterable[int] | None = None, cells: set[str] | None = None) -> list[Job]:
    """The jobs with the runs not yet stored (of the given passes and cells only, when
    named), each carrying what it was granted; a pass's runs already stored before an
    interruption are named in the job (the rest of that pass runs on a new file system)."""
    wanted = None if passes is None else set(passes)
    out: list[Job] = []
    for job in jobs:
        runs = tuple(r for r in job.runs if (wanted is None or r.repetition in wanted)
                     and (cells is None or r.cell.id in cells))
        remaining = tuple(r for r in runs if (r.cell.id, r.repetition) not in stored)
        if remaining:
            done_before = tuple(r.key for r in runs if r not in remaining)
            out.append(replace(job.with_runs(remaining, done_before), grant=grant))
    return out


def _run_passes(store: Store, study_id: int, plan: Plan, rule: StoppingRule, grant: Grant,
                execute: Callable[[list[Job]], None], countdown: Countdown,
                on_pass: Callable[[PassOutcome], None] | None) -> None:
    """``repetitions = "auto"``: pass after pass, each with the cells the stopping rule
    says still need runs (fslab.stopping.decide, over every value stored so far), in the
    plan's shuffled order of that pass; what was decided is stored after each pass. A
    resumed or retried study replays the same decisions from its stored runs."""
    cells = cell_infos(plan.cells)
    for index in range(rule.max_n + 1):
        decisions = decide(rule, cells, store.primary_values(study_id), index)
        store.set_auto(study_id, decisions.to_facts())
        repeating = set(decisions.repeating())
        todo = _jobs_to_do(plan.jobs, store.stored_runs(study_id), grant, passes=[index], cells=repeating) \
            if index < rule.max_n else []
        if on_pass:
            later = _jobs_to_do(plan.jobs, set(), grant, passes=range(index + 1, rule.max_n), cells=repeating)
            on_pass(PassOutcome(index, rule.max_n, decisions, sum(len(j.runs) for j in todo),
                                countdown.model.estimate(todo), countdown.model.estimate_by_pass(later)))
        if not repeating:
            return
        if todo:
            execute(todo)


def _recover_records(store: Store, study_id: int, jobs_dir: Path) -> int:
    """Records a job wrote before this process died between writing and storing them:
    store them now, so nothing measured is lost or measured again."""
    if not jobs_dir.is_dir():
        return 0
    stored = store.stored_runs(study_id)
    count = 0
    for path in sorted(p for p in jobs_dir.iterdir() if p.is_dir()):
        folder = JobFolder(path)
        for record in folder.records():
            if (record.cell_id, record.repetition) not in stored:
                store.add_record(study_id, record, source_dir=folder.path)
                stored.add((record.cell_id, record.repetition))
                count += 1
        shutil.rmtree(folder.path, ignore_errors=True)
    return count
