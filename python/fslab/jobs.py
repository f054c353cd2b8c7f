"""The job entry: one job (JSON) in, records and artifacts out. The host backend, a guest
and a remote worker all execute jobs through this one function, so a run never depends
on in-process state of the runner and storing happens only from records.

``OUT/records.jsonl`` gets one JSON record per line, appended and flushed as each run
ends, so a job killed half-way keeps what finished. ``OUT/runs/<run key>/`` holds each
run's artifacts. A study-level error (device refused, missing tool, results disk full)
is written to ``OUT/error.json`` with its type and message before it propagates, so a
caller in another process can stop the study with the same words.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .errors import FslabError
from .plan import Job
from .records import RunRecord

RECORDS_FILE = "records.jsonl"
ERROR_FILE = "error.json"


def load_job(path: Path) -> Job:
    """Read a job file; a file that is not a job is an FslabError naming it."""
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FslabError(f"{path}: cannot read the job: {exc}") from None
    try:
        return Job.from_json(data)
    except (ValueError, KeyError, TypeError) as exc:
        raise FslabError(f"{path}: not a valid fslab job: {exc}") from None


def write_job(job: Job, path: Path) -> None:
    path.write_text(json.dumps(job.to_json(), indent=1, default=str) + "\n")


def run_job(job: Job, out_dir: Path, work_dir: Path,
            on_record: Callable[[RunRecord], None] | None = None) -> None:
    """Execute ``job``; each record is appended to ``out_dir/records.jsonl`` and then
    handed to ``on_record`` as read back from its JSON line (what another process sees)."""
    from .executor import execute_job

    out_dir.mkdir(parents=True, exist_ok=True)
    work_dir.mkdir(parents=True, exist_ok=True)
    records = out_dir / RECORDS_FILE

    def emit(record: RunRecord) -> None:
        line = json.dumps(record.to_json(), default=str)
        with open(records, "a") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())
        if on_record is not None:
            on_record(RunRecord.from_json(json.loads(line)))

    try:
        execute_job(job, out_dir, work_dir, emit)
    except FslabError as exc:
        (out_dir / ERROR_FILE).write_text(json.dumps(
            {"type": type(exc).__name__, "scope": exc.scope, "message": str(exc)}) + "\n")
        raise


def read_records(out_dir: Path, skip: int = 0) -> Iterator[RunRecord]:
    """Complete records in ``out_dir/records.jsonl`` after the first ``skip``. A last line
    cut short by a kill is not a record and is left out."""
    path = out_dir / RECORDS_FILE
    if not path.exists():
        return
    with open(path) as f:
        for index, line in enumerate(f):
            if index < skip or not line.endswith("\n"):
                continue
            try:
                yield RunRecord.from_json(json.loads(line))
            except (json.JSONDecodeError, TypeError, KeyError):
                continue


def read_error(out_dir: Path) -> dict[str, Any] | None:
    path = out_dir / ERROR_FILE
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
