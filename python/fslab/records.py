"""Run records: the immutable, self-contained result of one run. The store accepts only
records, so runs may one day come from other machines; reports read only the store."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .metrics import unit_of

STATUS_OK = "ok"
STATUS_FAILED = "failed"


@dataclass(frozen=True)
class Metric:
    name: str
    value: float | None  # None: no number (``note`` says why, e.g. "too fast to measure")
    unit: str
    note: str | None = None

    @staticmethod
    def of(name: str, value: float) -> Metric:
        return Metric(name, float(value), unit_of(name))


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
    artifact_dir: str | None = None  # relative to the results directory

    @property
    def wall_s(self) -> float:
        return self.finished_at - self.started_at

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
