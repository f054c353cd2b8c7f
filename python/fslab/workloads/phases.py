"""The phases of a run whose figures come from phases run one after another (Bonnie++'s
tests): ``WorkloadResult.phases``. Its own module, loaded by the workloads that report
phases and by the per-phase predictions, so a job of another workload does not create
the class (a guest under TCG pays for each dataclass at every job's start)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..datarecords import asdict


@dataclass(frozen=True)
class PhaseSpan:
    """One phase of a run whose figures come from phases run one after another (one
    Bonnie++ test): when it ran, in ns on CLOCK_MONOTONIC (the block trace's clock, so a
    request's issue time tells its phase), the metric its figure is, and the work it did,
    which a device model's time for the phase's requests turns into a predicted figure
    (fslab.phase_predictions)."""

    key: str  # the phase's name (Bonnie++'s test: "block_write")
    metric: str  # the workload metric this phase's figure is (e.g. block_write_bytes_per_s)
    start_ns: int
    end_ns: int
    work: float  # bytes (IO and per-char tests), seeks, or files
    work_unit: str  # "bytes", "seeks" or "files"
    writes_bytes: int = 0  # bytes the phase writes: how much of them reached the device tells
    reads_bytes: int = 0  # bytes the phase reads
    note: str = ""  # what its prediction must say besides (Bonnie++'s per-char tests)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
