"""The results store: one SQLite file (WAL mode) per results directory, holding studies,
cells, runs, metrics and provenance; raw outputs live as files beside it.

Only RunRecords are written (``add_record``, which moves each run's artifacts from the
job's output directory into ``artifacts/study-N/<run key>/``), and reports read only
from here: each metric keeps its unit and better direction, each cell its primary
metric, so reading needs no plug-in.

Schema versions: 1 (first release); 2 adds ``studies.facts_json`` (the identity of a
handed-over disk), ``metrics.higher_is_better``, each cell's ``primary_metric`` and
``retired_runs`` (failed runs that ``--retry-failed`` ran again: history, never
reported as results). A version-1 file is upgraded in place when opened
(``_migrate_1_to_2``).

Opening checks the file before SQLite writes to it (``check_database``): an empty, cut
short, damaged or foreign file is an FslabError naming it, and is left byte for byte as
it was. Reading commands open it read-only (``Store(dir, read_only=True)``): they never
create a directory or a database, and on a read-only file system they still read.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import struct
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote

from .datarecords import replace
from .errors import STUDY_LEVEL_ERRNOS, FslabError, ResultsUnwritable
from .jobdata.record import RunRecord
from .metrics import MetricKind, is_ranked
from .store_compat import current_metrics
from .stored import (
    STATUS_OK,
    AutoFacts,
    HistoryRun,
    RetiredRun,
    StoredCell,
    StoredMetric,
    StoredRun,
    StudyFacts,
    StudyRevision,
    StudyRow,
)

if TYPE_CHECKING:
    from .jobdata.model import Cell
    from .plan import Plan

DB_NAME = "fslab.sqlite"
SCHEMA_VERSION = 2

SCHEMA = """
CREATE TABLE IF NOT EXISTS studies (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    source TEXT NOT NULL,
    spec_text TEXT NOT NULL,
    spec_hash TEXT NOT NULL,
    quick INTEGER NOT NULL,
    run_order TEXT NOT NULL,
    order_seed INTEGER NOT NULL,
    fresh TEXT NOT NULL,
    repetitions INTEGER NOT NULL,
    planned_runs INTEGER NOT NULL,
    skipped_json TEXT NOT NULL,
    host_json TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at REAL NOT NULL,
    finished_at REAL,
    facts_json TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS cells (
    study_id INTEGER NOT NULL REFERENCES studies(id),
    id TEXT NOT NULL,
    position INTEGER NOT NULL,
    filesystem TEXT NOT NULL,
    fs_type TEXT NOT NULL,
    workload TEXT NOT NULL,
    workload_kind TEXT NOT NULL,
    label TEXT NOT NULL,
    backend TEXT NOT NULL,
    params_json TEXT NOT NULL,
    axes_json TEXT NOT NULL,
    cell_json TEXT NOT NULL,
    PRIMARY KEY (study_id, id)
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id),
    cell_id TEXT NOT NULL,
    repetition INTEGER NOT NULL,
    sequence INTEGER NOT NULL,
    status TEXT NOT NULL,
    error TEXT,
    started_at REAL NOT NULL,
    finished_at REAL NOT NULL,
    provenance_json TEXT NOT NULL,
    artifact_dir TEXT,
    UNIQUE (study_id, cell_id, repetition)
);
CREATE TABLE IF NOT EXISTS retired_runs (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id),
    cell_id TEXT NOT NULL,
    repetition INTEGER NOT NULL,
    sequence INTEGER NOT NULL,
    status TEXT NOT NULL,
    error TEXT,
    started_at REAL NOT NULL,
    finished_at REAL NOT NULL,
    provenance_json TEXT NOT NULL,
    artifact_dir TEXT,
    retired_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS metrics (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    name TEXT NOT NULL,
    value REAL,
    unit TEXT NOT NULL,
    note TEXT,
    higher_is_better INTEGER,
    PRIMARY KEY (run_id, name)
);
"""


class Store:
    """The results of one directory. ``read_only``: for commands that only read (report,
    export, list): nothing is created, and the file is opened without write access
    (except a schema-1 file's one-time upgrade, which says so where it cannot write)."""

    def __init__(self, results_dir: Path, *, read_only: bool = False):
        self.results_dir = results_dir
        self.path = results_dir / DB_NAME
        if read_only:
            _check_results_to_read(results_dir)
        else:
            ensure_results_dir(results_dir)
        if not self.path.exists() and read_only:
            raise FslabError(f"no results in {results_dir} ({DB_NAME} is missing): check the "
                             "--results (-r) directory, or run a study first (`fslab run quickstart`)")
        if not self.path.exists():
            _create_database(self.path)
        version = check_database(self.path, reading=read_only)
        if read_only and version == 1:
            _upgrade_in_place(self.path)
        try:
            self.db = _connect(self.path, read_only)
            self.db.row_factory = sqlite3.Row
            if not read_only:
                self._prepare_for_writing()
        except sqlite3.Error as exc:
            raise _database_error(self.path, exc, writing=not read_only) from None

    def _prepare_for_writing(self) -> None:
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version == 1:
            _migrate_1_to_2(self.db)
        self.db.executescript(SCHEMA)
        self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        self.db.commit()

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -------------------------------------------------------------------------

    def create_study(self, *, name: str, source: str, spec_text: str, spec_hash: str,
                     plan: Plan, host: dict[str, Any], facts: StudyFacts | None = None) -> int:
        with self.db:
            cur = self.db.execute(
                "INSERT INTO studies (name, source, spec_text, spec_hash, quick, run_order,"
                " order_seed, fresh, repetitions, planned_runs, skipped_json, host_json, status,"
                " created_at, facts_json) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (name, source, spec_text, spec_hash, int(plan.quick), plan.order, plan.seed,
                 plan.fresh, plan.repetitions, len(plan.runs),
                 json.dumps([{"filesystem": s.filesystem, "reason": s.reason} for s in plan.skipped]),
                 json.dumps(host), "running", time.time(), json.dumps(facts or {})),
            )
            study_id = int(cur.lastrowid or 0)
            for position, cell in enumerate(plan.cells):
                self._insert_cell(study_id, position, cell)
        return study_id

    def _insert_cell(self, study_id: int, position: int, cell: Cell) -> None:
        self.db.execute(
            "INSERT INTO cells (study_id, id, position, filesystem, fs_type, workload,"
            " workload_kind, label, backend, params_json, axes_json, cell_json)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (study_id, cell.id, position, cell.filesystem, cell.fs_type, cell.workload,
             cell.workload_kind, cell.label, cell.backend, json.dumps(cell.params),
             json.dumps(cell.axes), json.dumps(cell.to_json())),
        )

    def add_record(self, study_id: int, record: RunRecord, source_dir: Path | None = None) -> int:
        """Store one run. A run already stored is an error: fslab never measures twice.
        With ``source_dir`` (the job's output directory), the record's artifact directory
        is relative to it and is moved to ``artifacts/study-N/<run key>/`` first."""
        try:
            return self._add_record(study_id, record, source_dir)
        except sqlite3.OperationalError as exc:
            if "full" in str(exc) or "readonly" in str(exc):
                raise ResultsUnwritable(f"cannot store run {record.run_key}: {self.path}: {exc}") from None
            raise _database_error(self.path, exc, writing=True) from None
        except OSError as exc:
            if exc.errno in STUDY_LEVEL_ERRNOS:
                raise ResultsUnwritable(f"cannot store run {record.run_key}'s files in {self.results_dir}: "
                                        f"{exc.strerror or exc}") from None
            raise

    def _add_record(self, study_id: int, record: RunRecord, source_dir: Path | None) -> int:
        if source_dir is not None and record.artifact_dir:
            record = self._move_artifacts(study_id, record, source_dir)
        with self.db:
            try:
                # A run's id names it for good (`fslab report --run N`, a retired run's folder):
                # never one a retired run had, which SQLite's rowid would reuse once the largest
                # ids were retired (a second --retry-failed then collided in retired_runs).
                cur = self.db.execute(
                    "INSERT INTO runs (id, study_id, cell_id, repetition, sequence, status, error,"
                    " started_at, finished_at, provenance_json, artifact_dir)"
                    " VALUES (1 + max(coalesce((SELECT max(id) FROM runs), 0),"
                    " coalesce((SELECT max(id) FROM retired_runs), 0)),?,?,?,?,?,?,?,?,?,?)",
                    (study_id, record.cell_id, record.repetition, record.sequence, record.status,
                     record.error, record.started_at, record.finished_at,
                     json.dumps(record.provenance, default=str), record.artifact_dir),
                )
            except sqlite3.IntegrityError as exc:
                raise FslabError(
                    f"run {record.cell_id} repetition {record.repetition} is already stored: {exc}"
                ) from None
            run_id = int(cur.lastrowid or 0)
            self.db.executemany(
                "INSERT INTO metrics (run_id, name, value, unit, note, higher_is_better)"
                " VALUES (?,?,?,?,?,?)",
                [(run_id, m.name, m.value, m.unit, m.note,
                  None if m.higher_is_better is None else int(m.higher_is_better))
                 for m in record.metrics],
            )
        return run_id

    def _move_artifacts(self, study_id: int, record: RunRecord, source_dir: Path) -> RunRecord:
        relative = Path("artifacts") / f"study-{study_id}" / record.run_key
        target = self.results_dir / relative
        source = source_dir / str(record.artifact_dir)
        if source.resolve() != target.resolve():
            if target.exists():  # left by a run that was interrupted before it was stored
                shutil.rmtree(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.exists():
                shutil.move(str(source), str(target))
            else:
                target.mkdir()
        return replace(record, artifact_dir=str(relative))

    def retire_failed(self, study_id: int) -> int:
        """Move the study's failed runs to ``retired_runs`` (their artifacts to
        ``<run>.failed-<id>/``) so they can be run again; returns how many."""
        rows = self.db.execute("SELECT * FROM runs WHERE study_id = ? AND status != 'ok'",
                               (study_id,)).fetchall()
        with self.db:
            for row in rows:
                artifact = row["artifact_dir"]
                if artifact and (self.results_dir / artifact).is_dir():
                    moved = f"{artifact}.failed-{row['id']}"
                    shutil.move(str(self.results_dir / artifact), str(self.results_dir / moved))
                    artifact = moved
                self.db.execute(
                    "INSERT INTO retired_runs (id, study_id, cell_id, repetition, sequence, status, error,"
                    " started_at, finished_at, provenance_json, artifact_dir, retired_at)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                    (row["id"], study_id, row["cell_id"], row["repetition"], row["sequence"], row["status"],
                     row["error"], row["started_at"], row["finished_at"], row["provenance_json"], artifact,
                     time.time()))
                self.db.execute("DELETE FROM metrics WHERE run_id = ?", (row["id"],))
                self.db.execute("DELETE FROM runs WHERE id = ?", (row["id"],))
        return len(rows)

    def retired_runs(self, study_id: int) -> list[RetiredRun]:
        if not self.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'retired_runs'").fetchone():
            return []  # a file written before the table existed, opened read-only
        rows = self.db.execute("SELECT * FROM retired_runs WHERE study_id = ? ORDER BY id",
                               (study_id,)).fetchall()
        return [cast(RetiredRun, dict(r)) for r in rows]  # the table's columns are its keys

    def revise_study(self, study_id: int, *, spec_text: str, spec_hash: str, new_cells: list[Cell],
                     revision: StudyRevision, name: str | None = None) -> None:
        """Adopt a changed study file for --retry-failed (fslab.identity.retry_plan): the new
        text and identity, ``new_cells`` added (they replace cells whose runs all failed; the
        old rows stay, with their retired runs, as history) and ``revision`` (the old text
        and what changed) appended to the study's facts. A cell stored already (a change
        undone: the file is back at an earlier definition) is taken up again, not added."""
        row = self.db.execute("SELECT facts_json FROM studies WHERE id = ?", (study_id,)).fetchone()
        stored = {r["id"] for r in self.db.execute("SELECT id FROM cells WHERE study_id = ?", (study_id,))}
        facts = json.loads(row["facts_json"])
        facts["revisions"] = [*facts.get("revisions", []), revision]
        with self.db:
            self.db.execute("UPDATE studies SET spec_text = ?, spec_hash = ?, facts_json = ? WHERE id = ?",
                            (spec_text, spec_hash, json.dumps(facts), study_id))
            if name is not None:  # a file renamed the study (fslab.runner: a change that touches no run)
                self.db.execute("UPDATE studies SET name = ? WHERE id = ?", (name, study_id))
            for cell in new_cells:
                if cell.id not in stored:
                    self._insert_cell(study_id, len(stored), cell)
                    stored.add(cell.id)

    def set_auto(self, study_id: int, auto: AutoFacts) -> None:
        """Keep what a ``repetitions = "auto"`` study decided after its latest pass (why each
        cell stopped, each comparison's looks) in the study's facts."""
        row = self.db.execute("SELECT facts_json FROM studies WHERE id = ?", (study_id,)).fetchone()
        facts = json.loads(row["facts_json"])
        facts["auto"] = auto
        try:
            with self.db:
                self.db.execute("UPDATE studies SET facts_json = ? WHERE id = ?", (json.dumps(facts), study_id))
        except sqlite3.Error as exc:
            raise _database_error(self.path, exc, writing=True) from None

    def primary_values(self, study_id: int) -> dict[str, dict[int, float | None]]:
        """Cell id -> repetition -> the value of the cell's primary metric (None: the run
        failed or gave no number): what the stopping rule of an auto study reads."""
        rows = self.db.execute(
            "SELECT r.cell_id, r.repetition, r.status, (SELECT m.value FROM metrics m WHERE m.run_id = r.id"
            " AND m.name = json_extract(c.cell_json, '$.primary_metric')) AS value FROM runs r JOIN cells c"
            " ON c.study_id = r.study_id AND c.id = r.cell_id WHERE r.study_id = ?", (study_id,)).fetchall()
        out: dict[str, dict[int, float | None]] = {}
        for r in rows:
            value = r["value"] if r["status"] == STATUS_OK and r["value"] is not None else None
            out.setdefault(r["cell_id"], {})[int(r["repetition"])] = None if value is None else float(value)
        return out

    def history(self) -> list[HistoryRun]:
        """Every stored run of every study, as much as estimates of time and noise need:
        its workload, backend, times, job and host, and its cell's primary metric."""
        rows = self.db.execute(
            "SELECT r.study_id, s.created_at AS study_created_at, s.quick, r.cell_id, c.workload,"
            " c.workload_kind, c.params_json, c.backend,"
            " c.fs_type, r.status, r.started_at, r.finished_at, r.sequence,"
            " json_extract(r.provenance_json, '$.job') AS job,"
            " COALESCE(json_extract(r.provenance_json, '$.guest.vm_host'),"
            "          json_extract(r.provenance_json, '$.host.hostname')) AS host,"
            " json_extract(r.provenance_json, '$.guest.boot_s') AS boot_s,"
            " json_extract(r.provenance_json, '$.guest.jobs_before_in_boot') AS jobs_before_in_boot,"
            " (SELECT m.value FROM metrics m WHERE m.run_id = r.id"
            "  AND m.name = json_extract(c.cell_json, '$.primary_metric')) AS value"
            " FROM runs r JOIN cells c ON c.study_id = r.study_id AND c.id = r.cell_id"
            " JOIN studies s ON s.id = r.study_id ORDER BY r.study_id, r.started_at").fetchall()
        return [HistoryRun(study_id=r["study_id"], study_created_at=float(r["study_created_at"]),
                           quick=bool(r["quick"]), cell_id=r["cell_id"],
                           workload=r["workload"], workload_kind=r["workload_kind"], params_json=r["params_json"],
                           backend=r["backend"], fs_type=r["fs_type"], ok=r["status"] == STATUS_OK,
                           started_at=r["started_at"], finished_at=r["finished_at"], sequence=r["sequence"],
                           job=None if r["job"] is None else str(r["job"]),
                           host=None if r["host"] is None else str(r["host"]),
                           boot_s=None if r["boot_s"] is None else float(r["boot_s"]),
                           jobs_before_in_boot=(None if r["jobs_before_in_boot"] is None
                                                else int(r["jobs_before_in_boot"])),
                           value=None if r["value"] is None else float(r["value"]))
                for r in rows]

    def ok_cell_ids(self, study_id: int) -> set[str]:
        """Cells with at least one successful stored run."""
        rows = self.db.execute("SELECT DISTINCT cell_id FROM runs WHERE study_id = ? AND status = 'ok'",
                               (study_id,)).fetchall()
        return {r["cell_id"] for r in rows}

    def failed_count(self, study_id: int) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM runs WHERE study_id = ? AND status != 'ok'",
                                   (study_id,)).fetchone()[0])

    def latest(self, spec_hash: str) -> StudyRow | None:
        """The newest study of this study file (any status)."""
        row = self.db.execute("SELECT * FROM studies WHERE spec_hash = ? ORDER BY id DESC LIMIT 1",
                              (spec_hash,)).fetchone()
        return self._study(row) if row else None

    def set_status(self, study_id: int, status: str) -> None:
        try:
            with self.db:
                self.db.execute(
                    "UPDATE studies SET status = ?, finished_at = ? WHERE id = ?",
                    (status, time.time() if status == "complete" else None, study_id),
                )
        except sqlite3.Error as exc:
            raise _database_error(self.path, exc, writing=True) from None

    # -- reading -------------------------------------------------------------------------

    def _study(self, row: sqlite3.Row) -> StudyRow:
        return StudyRow(
            id=row["id"], name=row["name"], source=row["source"], spec_hash=row["spec_hash"],
            quick=bool(row["quick"]), order=row["run_order"], seed=row["order_seed"],
            fresh=row["fresh"], repetitions=row["repetitions"], planned_runs=row["planned_runs"],
            skipped=json.loads(row["skipped_json"]), host=json.loads(row["host_json"]),
            status=row["status"], created_at=row["created_at"], finished_at=row["finished_at"],
            spec_text=row["spec_text"], facts=json.loads(row["facts_json"]),
        )

    def studies(self) -> list[StudyRow]:
        rows = self.db.execute("SELECT * FROM studies ORDER BY id").fetchall()
        return [self._study(r) for r in rows]

    def study(self, study_id: int | None = None) -> StudyRow:
        """One study; the newest when no id is given."""
        if study_id is None:
            row = self.db.execute("SELECT * FROM studies ORDER BY id DESC LIMIT 1").fetchone()
            if row is None:
                raise FslabError(f"no studies in {self.path}: run one with `fslab run STUDY`")
        else:
            row = self.db.execute("SELECT * FROM studies WHERE id = ?", (study_id,)).fetchone()
            if row is None:
                raise FslabError(f"no study {study_id} in {self.path}: `fslab list` shows them")
        return self._study(row)

    def latest_of_source(self, source: str, quick: bool, *, unfinished: bool = False) -> StudyRow | None:
        """The newest study of this source (a file path or "preset NAME") and quick mode,
        whatever its identity: what a --resume or --retry-failed compares against when the
        study or its input files changed."""
        row = self.db.execute(
            "SELECT * FROM studies WHERE source = ? AND quick = ?"
            + (" AND status != 'complete'" if unfinished else "") + " ORDER BY id DESC LIMIT 1",
            (source, int(quick)),
        ).fetchone()
        return self._study(row) if row else None

    def resumable(self, spec_hash: str) -> StudyRow | None:
        row = self.db.execute(
            "SELECT * FROM studies WHERE spec_hash = ? AND status != 'complete'"
            " ORDER BY id DESC LIMIT 1", (spec_hash,),
        ).fetchone()
        return self._study(row) if row else None

    def forget_study(self, study_id: int) -> None:
        """Remove a study that never stored a run (it was refused before its first run:
        a scheduler out of reach, a class no worker offers): no phantom "interrupted" row.
        Raises FslabError if it has runs."""
        if self.db.execute("SELECT 1 FROM runs WHERE study_id = ? UNION SELECT 1 FROM retired_runs "
                           "WHERE study_id = ?", (study_id, study_id)).fetchone():
            raise FslabError(f"study {study_id} has stored runs: it is kept")
        try:
            with self.db:
                self.db.execute("DELETE FROM cells WHERE study_id = ?", (study_id,))
                self.db.execute("DELETE FROM studies WHERE id = ?", (study_id,))
        except sqlite3.Error as exc:
            raise _database_error(self.path, exc, writing=True) from None

    def run_counts(self, study_id: int) -> tuple[int, int]:
        """(runs stored, of which failed): what `fslab list` shows of a study."""
        row = self.db.execute("SELECT COUNT(*) AS n, COALESCE(SUM(status != 'ok'), 0) AS failed FROM runs "
                              "WHERE study_id = ?", (study_id,)).fetchone()
        return int(row["n"]), int(row["failed"])

    def stored_runs(self, study_id: int) -> set[tuple[str, int]]:
        rows = self.db.execute(
            "SELECT cell_id, repetition FROM runs WHERE study_id = ?", (study_id,)
        ).fetchall()
        return {(r["cell_id"], r["repetition"]) for r in rows}

    def cells(self, study_id: int, *, replaced_too: bool = False) -> list[StoredCell]:
        """The study's cells in the study file's order: those of its definition now, not
        the ones a --retry-failed revision replaced (their runs are retired), unless
        ``replaced_too``."""
        rows = self.db.execute(
            "SELECT cell_json FROM cells WHERE study_id = ? ORDER BY position", (study_id,)
        ).fetchall()
        cells = [_cell(r["cell_json"]) for r in rows]
        if replaced_too:
            return cells
        row = self.db.execute("SELECT facts_json FROM studies WHERE id = ?", (study_id,)).fetchone()
        facts = json.loads(row["facts_json"]) if row else {}
        replaced: set[str] = set()
        for revision in facts.get("revisions", []):  # oldest first: a change undone takes its cell back
            for old, new in revision.get("replaced_cells", {}).items():
                replaced.add(old)
                replaced.discard(new)
        return [c for c in cells if c["id"] not in replaced]

    def runs(self, study_id: int) -> list[StoredRun]:
        """Every stored run of a study with its cell and metrics, in execution order."""
        rows = self.db.execute(
            "SELECT r.*, c.cell_json FROM runs r JOIN cells c"
            " ON c.study_id = r.study_id AND c.id = r.cell_id"
            " WHERE r.study_id = ? ORDER BY r.sequence", (study_id,),
        ).fetchall()
        metric_rows = self.db.execute(
            "SELECT m.* FROM metrics m JOIN runs r ON r.id = m.run_id WHERE r.study_id = ?",
            (study_id,),
        ).fetchall()
        by_run: dict[int, dict[str, StoredMetric]] = {}
        for m in metric_rows:
            better = m["higher_is_better"]
            by_run.setdefault(m["run_id"], {})[m["name"]] = StoredMetric(
                value=m["value"], unit=m["unit"], note=m["note"],
                higher_is_better=None if better is None else bool(better),
            )
        return [
            StoredRun(
                run_id=r["id"], cell=_cell(r["cell_json"]), repetition=r["repetition"],
                sequence=r["sequence"], status=r["status"], error=r["error"],
                started_at=r["started_at"], finished_at=r["finished_at"],
                provenance=(provenance := json.loads(r["provenance_json"])), artifact_dir=r["artifact_dir"],
                metrics=current_metrics(by_run.get(r["id"], {}), provenance),  # old names read as today's
            )
            for r in rows
        ]


def _cell(text: str) -> StoredCell:
    """A stored cell's JSON, as the plan wrote it (the shape is StoredCell's)."""
    cell: StoredCell = json.loads(text)
    return cell


FIX_RESULTS = "pass another --results (-r) directory"
_SQLITE_MAGIC = b"SQLite format 3\x00"
_OUR_TABLES = {"studies", "cells", "runs", "metrics"}


# What fio reads as its own syntax in a job file's path (its files and mount point live in
# the results directory): ';' and '#' start a comment, '${' expands the environment. ':'
# separates fio's directory lists and is escaped where fslab writes a directory (fio.py).
FIO_SYNTAX = (";", "#", "${")


def check_results_path(results_dir: Path) -> None:
    """Refuse a results directory whose absolute path fio cannot take (every run would
    fail after mkfs), before anything is made."""
    text = str(results_dir.absolute())
    bad = [c for c in FIO_SYNTAX if c in text] + (["a control character"] if not text.isprintable() else [])
    if bad:
        raise FslabError(f"results directory {text!r} holds {' and '.join(repr(b) if len(b) < 3 else b for b in bad)}, "
                         f"which fio reads as job-file syntax (a comment or a variable), so every run would fail: "
                         f"{FIX_RESULTS} whose path has none of {' '.join(FIO_SYNTAX)}")


def ensure_results_dir(results_dir: Path) -> None:
    """Make the results directory (and missing parents) for writing, or say in one line
    why it cannot be: a file in the way, no permission, a read-only file system, a path
    fio cannot take (check_results_path)."""
    check_results_path(results_dir)
    if results_dir.exists() and not results_dir.is_dir():
        raise FslabError(f"results directory {results_dir} is a file, not a directory: {FIX_RESULTS}")
    try:
        results_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FslabError(f"cannot create the results directory {results_dir}: "
                         f"{exc.strerror or exc}: {FIX_RESULTS} in a writable place") from None
    if not os.access(results_dir, os.W_OK | os.X_OK):
        raise FslabError(f"results directory {results_dir} is not writable (permissions or a "
                         f"read-only file system): make it writable, or {FIX_RESULTS}")


def _check_results_to_read(results_dir: Path) -> None:
    if not results_dir.exists():
        raise FslabError(f"no results directory {results_dir}: check the --results (-r) path "
                         "(`fslab run` writes to fslab-results by default)")
    if not results_dir.is_dir():
        raise FslabError(f"{results_dir} is a file, not a results directory: {FIX_RESULTS}")


def check_database(path: Path, *, reading: bool = False) -> int:
    """The schema version of an existing results file, checked without writing to it:
    an empty, truncated, damaged or foreign file, or one from a newer fslab, is an
    FslabError that names it (the file is left exactly as it is). ``reading``: a command
    that only reads refuses an SQLite database without tables too (a run would make them)."""
    fix = (f"it is left untouched; restore it from a backup, or move it away and {FIX_RESULTS} "
           "to start afresh")
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            header = f.read(100)
    except OSError as exc:
        raise FslabError(f"cannot read {path}: {exc.strerror or exc}") from None
    if size == 0:
        raise FslabError(f"{path} is empty (0 bytes), not an fslab results database: {fix}")
    if len(header) < 100 or not header.startswith(_SQLITE_MAGIC):
        raise FslabError(f"{path} is not an SQLite database (fslab results are): {fix}")
    page_size = struct.unpack(">H", header[16:18])[0]
    page_size = 65536 if page_size == 1 else page_size
    pages, changes, valid_for = struct.unpack(">I", header[28:32])[0], header[24:28], header[92:96]
    wal = path.with_name(path.name + "-wal")  # pages committed to it, not yet checkpointed
    if changes == valid_for and pages * page_size > size and not (wal.exists() and wal.stat().st_size):
        raise FslabError(f"{path} is truncated ({size} bytes; its header says {pages * page_size}): {fix}")
    try:
        db = _connect(path, read_only=True)
        try:
            verdict = db.execute("PRAGMA quick_check").fetchone()[0]
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise FslabError(f"{path} is damaged ({exc}): {fix}") from None
    if verdict != "ok":
        raise FslabError(f"{path} is damaged (SQLite's check: {verdict}): {fix}")
    if version > SCHEMA_VERSION:
        raise FslabError(f"{path} was written by a newer fslab (schema {version}); upgrade fslab")
    if reading and not tables:
        raise FslabError(f"{path} is an SQLite database without tables, not fslab's results (no study was "
                         f"ever stored in it): {FIX_RESULTS}, or run a study into it")
    if tables and not _OUR_TABLES <= tables:
        raise FslabError(f"{path} is an SQLite database, but not fslab's results (tables: "
                         f"{', '.join(sorted(tables))}): {FIX_RESULTS}")
    return version


def _create_database(path: Path) -> None:
    """A new, empty results file, made beside it and linked into place whole: another
    process (`fslab list` while a study starts) never sees a half-made, 0-byte file,
    which would be a damaged one."""
    made = path.with_name(f".{path.name}.{os.getpid()}.new")
    try:
        db = sqlite3.connect(made)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.commit()
        finally:
            db.close()
        with contextlib.suppress(FileExistsError):  # another process made it first
            os.link(made, path)
    except sqlite3.Error as exc:
        raise _database_error(path, exc, writing=True) from None
    except OSError as exc:
        raise FslabError(f"cannot create {path}: {exc.strerror or exc}: {FIX_RESULTS}") from None
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{made}{suffix}").unlink(missing_ok=True)


def _connect(path: Path, read_only: bool) -> sqlite3.Connection:
    """A connection; read-only ones by URI (``mode=ro``), which create nothing beside the
    file. A WAL database opened ``mode=ro`` makes its ``-wal`` and ``-shm`` files when they
    are missing (and leaves them: only a writer removes them), so a file with no ``-wal``
    (closed cleanly: everything is in the file itself, and no writer has it open, for a
    writer's connection keeps its ``-wal``) is opened ``immutable``. With a ``-wal`` (a
    study running, or killed) the reader goes through it, to see its last runs. On a
    read-only file system SQLite cannot make the shared-memory index: immutable there too."""
    if not read_only:
        return sqlite3.connect(path, timeout=30)
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    if not path.with_name(path.name + "-wal").exists():
        return sqlite3.connect(uri + "&immutable=1", uri=True, timeout=30)
    try:
        db = sqlite3.connect(uri, uri=True, timeout=30)
        db.execute("PRAGMA user_version").fetchone()
        return db
    except sqlite3.OperationalError:
        if os.access(path.parent, os.W_OK):
            raise
        return sqlite3.connect(uri + "&immutable=1", uri=True, timeout=30)


def _database_error(path: Path, exc: sqlite3.Error, *, writing: bool) -> FslabError:
    text = str(exc)
    if writing and ("readonly" in text or "unable to open" in text):
        return FslabError(f"cannot write {path} ({text}): it is read-only or on a read-only file "
                          f"system; make it writable, or {FIX_RESULTS}")
    if isinstance(exc, sqlite3.OperationalError) and "locked" in text:
        return FslabError(f"{path} is locked by another process ({text}); try again when it is done")
    return FslabError(f"cannot open {path}: {text}")


def _upgrade_in_place(path: Path) -> None:
    """A reading command met a schema-1 file: upgrade it once (it must be written), or say
    why it cannot be and what to do."""
    if not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)):
        raise FslabError(
            f"{path} was written by fslab 0.1.0 (schema 1) and must be upgraded once to schema "
            f"{SCHEMA_VERSION} before it can be read, but it is not writable here: make it (and "
            "its directory) writable, or copy the results directory somewhere writable and read "
            "the copy")
    try:
        db = sqlite3.connect(path, timeout=30)
        try:
            _migrate_1_to_2(db)
            db.executescript(SCHEMA)
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise _database_error(path, exc, writing=True) from None


def _migrate_1_to_2(db: sqlite3.Connection) -> None:
    """Schema 1 -> 2, in one transaction: the new columns, and for old rows the better
    direction of each metric and each cell's primary metric, from the plug-ins' own
    declarations (the only time the store consults them)."""
    import fslab.predictions  # noqa: F401  (declares prediction metrics)
    import fslab.trace_metrics  # noqa: F401  (declares trace metrics)

    from .metrics import UndeclaredMetric, kind_of
    from .workloads import WORKLOADS

    WORKLOADS.names()  # loads every workload plug-in: each declares its metrics
    with db:
        db.execute("ALTER TABLE studies ADD COLUMN facts_json TEXT NOT NULL DEFAULT '{}'")
        db.execute("ALTER TABLE metrics ADD COLUMN higher_is_better INTEGER")
        for (name,) in db.execute("SELECT DISTINCT name FROM metrics").fetchall():
            try:
                better = int(kind_of(name).higher_is_better)
            except UndeclaredMetric:
                continue
            db.execute("UPDATE metrics SET higher_is_better = ? WHERE name = ?", (better, name))
        for study_id, cell_id, text in db.execute("SELECT study_id, id, cell_json FROM cells").fetchall():
            cell = json.loads(text)
            if cell.get("primary_metric"):
                continue
            try:
                cell["primary_metric"] = WORKLOADS.get(cell["workload_kind"]).primary_metrics(cell["params"])[0]
            except KeyError:
                cell["primary_metric"] = ""
            db.execute("UPDATE cells SET cell_json = ? WHERE study_id = ? AND id = ?",
                       (json.dumps(cell), study_id, cell_id))
        db.execute("PRAGMA user_version = 2")


def stored_metric_kind(runs: Sequence[StoredRun], name: str) -> MetricKind:
    """Unit and better direction of a metric as the runs stored it (no plug-in needed).
    A metric no run has (every run failed) gets unit '?' and 'higher is better'."""
    for run in runs:
        metric = run["metrics"].get(name)
        if metric is not None:
            better = metric.get("higher_is_better")
            return MetricKind(metric["unit"], True if better is None else better, name, is_ranked(name))
    return MetricKind("?", True, name, is_ranked(name))
