"""Run records: the immutable, self-contained result of one run. The store accepts only
records, so runs may one day come from other machines; reports read only the store."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .metrics import kind_of

STATUS_OK = "ok"
STATUS_FAILED = "failed"


@dataclass(frozen=True)
class Metric:
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
        return Metric(data["name"], data["value"], data["unit"], data.get("note"),
                      data.get("higher_is_better"))


@dataclass(frozen=True)
class RunRecord:
    cell_id: str
    repetition: int
    sequence: int  # position of the run in the study's execution order
    status: str  # STATUS_OK or STATUS_FAILED
    started_at: float  # Unix time, seconds
    finished_at: float
    metrics: tuple[Metric, ...] = ()
    error: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    # Relative to the directory the record lives in: a job's --out directory while the
    # job runs, the results directory once the store has moved the artifacts into place.
    artifact_dir: str | None = None

    @property
    def run_key(self) -> str:
        """``<cell id>-r<repetition>``: names the run's artifact directory (repetitions
        count from 1 where people read them, as ``plan.Run.key``)."""
        return f"{self.cell_id}-r{self.repetition + 1}"

    @property
    def wall_s(self) -> float:
        return self.finished_at - self.started_at

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(data: dict[str, Any]) -> RunRecord:
        """The inverse of ``to_json``: a record read back from ``records.jsonl``."""
        fields = dict(data)
        fields["metrics"] = tuple(Metric.from_json(m) for m in data.get("metrics", ()))
        return RunRecord(**fields)
