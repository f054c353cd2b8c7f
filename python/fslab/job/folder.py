"""A job's folder (``fslab job run JOB --out FOLDER``): every file name of it lives here,
and everyone who reads or writes one (the job entry, the backends, the Dask worker and
driver, the runner's recovery) goes through this module.

    FOLDER/job.json          the job as it was handed over
    FOLDER/records.jsonl     one record per run, appended and fsynced as each run ends
    FOLDER/error.json        a study-level error: type, scope and message
    FOLDER/job.stderr        a job process's own output (host process, Dask worker)
    FOLDER/console.log       a guest's console
    FOLDER/runs/<run key>/   each run's artifacts (its record names this folder)
    FOLDER/aging.json        `fslab job age`: the aging report (or aging-error.txt)

``fail_unfinished`` is the one way failed records are made for runs a job did not
finish (the file system could not be made, the guest died, a worker was lost).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from ..datarecords import datarecord
from ..jobdata.model import Run
from ..jobdata.record import RecordFormatError, RunRecord, failed_record

JOB_FILE = "job.json"
RECORDS_FILE = "records.jsonl"
ERROR_FILE = "error.json"
STDERR_FILE = "job.stderr"
CONSOLE_FILE = "console.log"
RUNS_DIR = "runs"
AGING_RESULT = "aging.json"
AGING_ERROR = "aging-error.txt"
RUN_ERROR_FILE = "error.txt"  # in a failed run's artifact folder: why it failed


@datarecord(frozen=True)
class StudyLevelError:
    """What ``error.json`` holds: an error that stops the study, in another process's words."""

    type: str
    scope: str
    message: str


@datarecord(frozen=True)
class JobFolder:
    """A job's folder: its job file, records, error and the runs' artifacts."""

    path: Path

    @property
    def job_file(self) -> Path:
        return self.path / JOB_FILE

    @property
    def records_file(self) -> Path:
        return self.path / RECORDS_FILE

    @property
    def stderr_file(self) -> Path:
        return self.path / STDERR_FILE

    @property
    def console_file(self) -> Path:
        return self.path / CONSOLE_FILE

    @property
    def runs_dir(self) -> Path:
        return self.path / RUNS_DIR

    def make(self) -> JobFolder:
        self.path.mkdir(parents=True, exist_ok=True)
        return self

    def run_dir(self, key: str) -> tuple[Path, str]:
        """A run's artifact folder, made if needed: (its path, its path relative to the
        job folder, as the run's record names it)."""
        relative = f"{RUNS_DIR}/{key}"
        path = self.path / relative
        path.mkdir(parents=True, exist_ok=True)
        return path, relative

    # -- records -----------------------------------------------------------------------

    def append(self, record: RunRecord) -> str:
        """Append one record, flushed and fsynced (a job killed next keeps it); returns
        the line as written."""
        line = record.to_line()
        with open(self.records_file, "a") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
        return line

    def record_lines(self, skip: int = 0) -> list[str]:
        """Complete lines of ``records.jsonl`` after the first ``skip``: a last line cut
        short by a kill is not a record and is left out."""
        try:
            with open(self.records_file) as f:
                lines = f.readlines()
        except FileNotFoundError:
            return []
        return [line for line in lines[skip:] if line.endswith("\n")]

    def new_record_lines(self, offset: int) -> tuple[list[str], int]:
        """The complete lines of ``records.jsonl`` from byte ``offset`` on, and the offset
        after the last of them (for a reader that looks again and again while it grows)."""
        try:
            with open(self.records_file, "rb") as f:
                f.seek(offset)
                data = f.read()
        except FileNotFoundError:
            return [], offset
        whole = data[:data.rfind(b"\n") + 1]  # a line still being written waits for next time
        return whole.decode().splitlines(keepends=True), offset + len(whole)

    def records(self, skip: int = 0) -> Iterator[RunRecord]:
        """The records after the first ``skip`` lines. A line that is not a record this
        fslab reads raises RecordFormatError naming the file."""
        for number, line in enumerate(self.record_lines(skip), skip + 1):
            try:
                yield RunRecord.from_line(line)
            except RecordFormatError as exc:
                raise RecordFormatError(f"{self.records_file}, line {number}: {exc}") from None

    # -- a study-level error -----------------------------------------------------------

    def write_error(self, exc: BaseException, scope: str) -> None:
        (self.path / ERROR_FILE).write_text(json.dumps(
            {"type": type(exc).__name__, "scope": scope, "message": str(exc)}) + "\n")

    def error(self) -> StudyLevelError | None:
        try:
            data = json.loads((self.path / ERROR_FILE).read_text())
            return StudyLevelError(str(data["type"]), str(data["scope"]), str(data["message"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None


class RecordWatcher:
    """While a job runs out of reach (in a guest), hand each record to ``on_record`` as
    its line appears in the folder's ``records.jsonl``: a thread reads the file every
    ``interval_s`` seconds. Each record is handed on once; it is only shown, not stored
    (whoever stores waits for the job's end). A last look is taken when the block ends,
    so a record written just before is not missed. An error of ``on_record`` (or an
    unreadable line) stops the watching and is raised when the block ends."""

    def __init__(self, folder: JobFolder, on_record: Callable[[RunRecord], None], interval_s: float = 1.0):
        self.folder = folder
        self.on_record = on_record
        self.interval_s = interval_s
        self.seen = 0  # lines of records.jsonl handed on so far
        self._offset = 0  # bytes of it read so far: each look reads only what was added
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="fslab-record-watcher", daemon=True)
        self._error: BaseException | None = None

    def __enter__(self) -> RecordWatcher:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
        if kind is None:
            if self._error is None:
                self._look()  # runs that ended since the thread's last look
            if self._error is not None:
                raise self._error

    def _watch(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self._look()
            except BaseException as exc:  # raised in the caller's thread when the block ends
                self._error = exc
                return

    def _look(self) -> None:
        lines, self._offset = self.folder.new_record_lines(self._offset)
        for line in lines:
            self.seen += 1
            try:
                record = RunRecord.from_line(line)
            except RecordFormatError as exc:
                raise RecordFormatError(f"{self.folder.records_file}, line {self.seen}: {exc}") from None
            self.on_record(record)


def unfinished(runs: Iterable[Run], records: Iterable[RunRecord]) -> list[Run]:
    """The runs among ``runs`` that no record covers, in their order."""
    done = {(r.cell_id, r.repetition) for r in records}
    return [r for r in runs if (r.cell.id, r.repetition) not in done]


def fail_unfinished(runs: Iterable[Run], records: Iterable[RunRecord], reason: str, *,
                    started: float, provenance: Mapping[str, Any] | Callable[[Run], dict[str, Any]],
                    folder: JobFolder | None = None,
                    files: Mapping[str, str | Path] | None = None) -> list[RunRecord]:
    """A failed record for each run of ``runs`` without one in ``records``, saying
    ``reason``. ``provenance``: the same facts for each, or a function of the run. With a
    ``folder``, each run gets its artifact folder holding ``error.txt`` and ``files``
    (name -> a text, or a file to copy: the job's mkfs output, a guest's console)."""
    out = []
    for run in unfinished(runs, records):
        relative = None
        if folder is not None:
            path, relative = folder.run_dir(run.key)
            (path / RUN_ERROR_FILE).write_text(reason + "\n")
            for name, content in (files or {}).items():
                if isinstance(content, Path):
                    if content.exists():
                        shutil.copyfile(content, path / name)
                else:
                    (path / name).write_text(content)
        facts = provenance(run) if callable(provenance) else dict(provenance)
        out.append(failed_record(run, reason, started=started, provenance=facts, artifact_dir=relative))
    return out
