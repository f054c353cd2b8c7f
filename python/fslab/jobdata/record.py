"""Run records: the immutable, self-contained result of one run. The store accepts only
records, so runs can come from anywhere (this process, a guest, another machine); reports
read only the store.

A record travels as one JSON line that names its format (``"format": "fslab-record/1"``).
Lines written before records carried a format (fslab 0.1) read as the same fields; a
line of a format this fslab does not know is an error that says so, never a guess.
"""

from __future__ import annotations

import json
import time
from typing import Any

from ..datarecords import asdict, datarecord, field
from ..errors import FslabError
from ..metrics import kind_of
from .model import Run, run_key

RECORD_FORMAT = "fslab-record/1"
STATUS_FAILED = "failed"


class RecordFormatError(FslabError, ValueError):
    """A record line this fslab cannot read (another format, or not a record at all)."""


@datarecord(frozen=True)
class Metric:
    """One named number of a run, with its unit and better direction."""

    name: str
    value: float | None  # None: no number (``note`` says why, e.g. "too fast to measure")
    unit: str
    note: str | None = None
    higher_is_better: bool | None = None  # stored, so reports need no plug-in to read it

    @staticmethod
    def of(name: str, value: float | None, note: str | None = None) -> Metric:
        """A metric with the unit and direction its declaration gives."""
        kind = kind_of(name)
        return Metric(name, None if value is None else float(value), kind.unit, note,
                      kind.higher_is_better)

    @staticmethod
    def from_json(data: dict[str, Any]) -> Metric:
        return Metric(str(data["name"]), data["value"], str(data["unit"]), data.get("note"),
                      data.get("higher_is_better"))


@datarecord(frozen=True)
class RunRecord:
    """What one run left: its status, times, metrics, provenance and artifacts."""

    cell_id: str
    repetition: int
    sequence: int  # position of the run in the study's execution order
    status: str  # STATUS_OK or STATUS_FAILED
    started_at: float  # Unix time, seconds
    finished_at: float
    metrics: tuple[Metric, ...] = ()
    error: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    # Relative to the directory the record lives in: a job's folder while the job runs,
    # the results directory once the store has moved the artifacts into place.
    artifact_dir: str | None = None

    @property
    def run_key(self) -> str:
        """``<cell id>-r<repetition>``: names the run's artifact folder (as ``Run.key``)."""
        return run_key(self.cell_id, self.repetition)

    @property
    def wall_s(self) -> float:
        return self.finished_at - self.started_at

    def to_json(self) -> dict[str, Any]:
        return {"format": RECORD_FORMAT, **asdict(self)}

    @staticmethod
    def from_json(data: dict[str, Any]) -> RunRecord:
        """The inverse of ``to_json``; also reads a line without a format (fslab 0.1).
        Raises RecordFormatError for a record of an unknown format or a broken one."""
        if not isinstance(data, dict):
            raise RecordFormatError(f"not a run record (a JSON {type(data).__name__})")
        found = data.get("format")
        if found not in (RECORD_FORMAT, None):
            raise RecordFormatError(f"a run record of format {found!r}, which this fslab does not read "
                                    f"(it reads {RECORD_FORMAT!r}): upgrade fslab")
        fields = {k: v for k, v in data.items() if k != "format"}
        try:
            fields["metrics"] = tuple(Metric.from_json(m) for m in data.get("metrics", ()))
            return RunRecord(**fields)
        except (KeyError, TypeError) as exc:
            raise RecordFormatError(f"not a complete run record: {exc}") from None

    def to_line(self) -> str:
        """One line of ``records.jsonl`` (newline included)."""
        return json.dumps(self.to_json(), default=str) + "\n"

    @staticmethod
    def from_line(line: str) -> RunRecord:
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RecordFormatError(f"not JSON: {exc}") from None
        return RunRecord.from_json(data)


def failed_record(run: Run, error: str, *, started: float, provenance: dict[str, Any],
                  artifact_dir: str | None) -> RunRecord:
    """The record of a run that failed (or never ran), ending now: the one way every part
    of fslab writes a failure down."""
    return RunRecord(cell_id=run.cell.id, repetition=run.repetition, sequence=run.sequence,
                     status=STATUS_FAILED, started_at=started, finished_at=time.time(), error=error,
                     provenance=provenance, artifact_dir=artifact_dir)
