"""Noise remembered: the run-to-run spread (coefficient of variation of a cell's primary
metric) seen on a host, per workload kind and backend, from the studies in the results
store, and how many runs per cell that spread asks for a given precision.

Each cell with at least 3 successful runs gives one CV; the kind's figure is the median
over its cells (one very noisy cell does not decide it). Quick runs (``--quick``: 1-second
runtimes, scaled-down data) are left out: their spread is not a full run's.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from .stored import HistoryRun

MIN_RUNS_FOR_CV = 3


@dataclass(frozen=True)
class NoiseSeen:
    workload_kind: str
    backend: str
    host: str
    cv: float  # median over cells of sd / |mean| (a fraction)
    cells: int  # cells it rests on
    runs: int

    def runs_needed(self, precision: float, limit: int = 1000) -> int | None:
        return runs_for_precision(self.cv, precision, limit)

    def text(self, precision: float) -> str:
        """'at the 7.0% CV seen here (fio on the host, median of 12 cells, 40 runs), ±5%
        needs about 8 runs per cell'."""
        needed = self.runs_needed(precision)
        need = f"about {needed} runs per cell" if needed is not None else "more than 1000 runs per cell"
        return (f"at the {self.cv:.1%} CV seen on {self.host} ({self.workload_kind} on the {self.backend} backend, "
                f"median of {self.cells} cells, {self.runs} runs), ±{precision:.0%} needs {need}")


@lru_cache(maxsize=1024)
def _t(df: int) -> float:
    # Imported here: `fslab plan` loads this module and needs no numpy until it estimates.
    from .analysis.stats import t_quantile

    return t_quantile(0.975, df)


def runs_for_precision(cv: float, precision: float, limit: int = 1000) -> int | None:
    """The smallest n whose 95% Student-t interval is within ±precision of the mean at this
    CV (t(0.975, n-1) x cv / sqrt(n) <= precision); None beyond ``limit``."""
    for n in range(2, limit + 1):
        if _t(n - 1) * cv / math.sqrt(n) <= precision:
            return n
    return None


def half_width_at(cv: float, n: int) -> float | None:
    """The expected relative half-width of a 95% interval over n runs at this CV."""
    return None if n < 2 else _t(n - 1) * cv / math.sqrt(n)


def noise_seen(history: Iterable[HistoryRun], host: str) -> dict[tuple[str, str], NoiseSeen]:
    """(workload kind, backend) -> the spread seen on ``host``, from full (not quick) runs."""
    values: dict[tuple[int, str], list[float]] = {}
    kinds: dict[tuple[int, str], tuple[str, str]] = {}
    for run in history:
        if run["quick"] or not run["ok"] or run["value"] is None or run["host"] != host:
            continue
        key = (run["study_id"], run["cell_id"])
        values.setdefault(key, []).append(run["value"])
        kinds[key] = (run["workload_kind"], run["backend"])
    cvs: dict[tuple[str, str], list[tuple[float, int]]] = {}
    for key, sample in values.items():
        mean = statistics.fmean(sample)
        if len(sample) < MIN_RUNS_FOR_CV or mean == 0:
            continue
        cvs.setdefault(kinds[key], []).append((statistics.stdev(sample) / abs(mean), len(sample)))
    return {kind: NoiseSeen(kind[0], kind[1], host, statistics.median(cv for cv, _ in seen), len(seen),
                            sum(n for _, n in seen))
            for kind, seen in cvs.items()}
