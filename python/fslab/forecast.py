"""What `fslab plan` says a study will take before it runs: how many runs (a range for
``repetitions = "auto"``, and the likely number at the noise seen here), how long
(fslab.estimate: from the times runs of the same workload and backend took in the
results directory, guest boots and file-system setups counted per job), and the
run-to-run spread seen on this host (fslab.noise) with the runs per cell it asks for."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .estimate import TimeEstimate, TimeModel
from .jobdata.model import Job, Run
from .noise import MIN_RUNS_FOR_CV, NoiseSeen, half_width_at, noise_seen, runs_for_precision
from .plan import Plan
from .priors import GUEST_SETUP_KVM, TYPICAL_CV, TYPICAL_CV_SOURCE
from .spec import AUTO_PRECISION
from .stored import HistoryRun
from .units import counted


def _only(jobs: Sequence[Job], keep: Callable[[Run], bool]) -> list[Job]:
    out = []
    for job in jobs:
        runs = tuple(r for r in job.runs if keep(r))
        if runs:
            out.append(job.with_runs(runs, job.resumed_without))
    return out


@dataclass
class Forecast:
    runs_min: int
    runs_max: int
    time_min: TimeEstimate
    time_max: TimeEstimate
    precision: float
    noise: list[NoiseSeen] = field(default_factory=list)  # of the study's workload kinds, on this host
    unseen: list[tuple[str, str]] = field(default_factory=list)  # (kind, backend) with no spread seen
    runs_likely: int | None = None  # auto: at the spread seen here
    time_likely: TimeEstimate | None = None
    fixed_n: int | None = None  # a fixed study's runs per cell
    history_source: str = ""  # where the history came from, or why there is none
    runs_max_per_cell: int = 0  # an auto study's max_repetitions
    # The same study with its guest jobs as assumed under KVM (built-in priors only), where
    # it has guest jobs: the times above rest on those seen here or on TCG's priors.
    time_kvm: TimeEstimate | None = None

    def lines(self) -> list[str]:
        out: list[str] = []
        if self.runs_min == self.runs_max:
            out.append(f"estimated time: {self.time_max.text()}")
        else:
            out.append(f"runs: {self.runs_min} to {self.runs_max} (each cell between min_repetitions and "
                       "max_repetitions times)" + (f", probably about {self.runs_likely} at the spread seen here"
                                                   if self.runs_likely is not None else ""))
            out.append(f"estimated time, every cell min_repetitions times: {self.time_min.text()}")
            if self.time_likely is not None:
                out.append(f"  probably {self.time_likely.short()}, if cells stop on precision at the spread seen here")
            out.append(f"  every cell max_repetitions times: {self.time_max.at_most()}")
        if self.time_kvm is not None and self.time_kvm.unknown < self.time_kvm.runs:  # else nothing to say
            kvm = (f": {self.time_kvm.short()}" if self.runs_min == self.runs_max
                   else f", every cell max_repetitions times: {self.time_kvm.at_most()}")
            out.append(f"  with KVM for its guest jobs{kvm}, assuming a guest boot's setup at "
                       f"{GUEST_SETUP_KVM.range_text()}, a job in the guest of the one before set up as on the host "
                       "and a guest run's overhead at a host run's (not measured: "
                       "fslab's development machines have had no usable KVM; fslab uses KVM where /dev/kvm boots "
                       "a stock kernel)")
        for seen in self.noise:
            line = seen.text(self.precision)
            if self.fixed_n is not None:
                width = half_width_at(seen.cv, self.fixed_n)
                line += (f"; {self.fixed_n} runs per cell give about ±{width:.0%}" if width is not None
                         else f"; {self.fixed_n} run per cell gives no interval")
            out.append("noise: " + line)
        for kind, backend in self.unseen:
            out.append(f"noise: no run-to-run spread of {kind} on the {backend} backend seen on this host yet "
                       f"(quick runs and cells of fewer than {MIN_RUNS_FOR_CV} ok runs do not count); "
                       + self.typical_text())
        out.append(f"history: {self.history_source}")
        return out

    def typical_text(self) -> str:
        """What precision the plan can promise at a typical spread, before any is seen here."""
        needed = runs_for_precision(TYPICAL_CV, self.precision)
        n = self.fixed_n if self.fixed_n is not None else self.runs_max_per_cell
        width = half_width_at(TYPICAL_CV, n) if n else None
        promise = (f"{n} runs per cell give about ±{width:.0%}" if width is not None
                   else f"{n} run per cell gives no interval")
        return (f"at a typical {TYPICAL_CV:.1%} CV ({TYPICAL_CV_SOURCE}) ±{self.precision:.0%} needs about "
                f"{needed} runs per cell and {promise}"
                + ("" if self.fixed_n is not None else " (max_repetitions); repetitions = \"auto\" finds out"))

    def to_json(self) -> dict[str, Any]:
        def est(e: TimeEstimate | None) -> dict[str, Any] | None:
            return None if e is None else {
                "seconds": e.seconds, "low": e.low, "high": e.high, "runs": e.runs, "from_study": e.from_study,
                "from_history": e.from_history, "from_prior": e.from_prior, "from_declared": e.from_declared,
                "unknown": e.unknown, "capped": e.capped, "capped_s": e.capped_s, "complete": e.complete,
                "seconds_with_capped": e.upper_seconds,
                "guest_boots": e.guest_boots, "guest_boots_untimed": e.guest_boots_untimed,
                "guest_jobs_in_boot": e.guest_in_boot,
                "setups_unknown": e.setups_unknown, "text": e.text()}

        return {"runs_min": self.runs_min, "runs_max": self.runs_max, "runs_likely": self.runs_likely,
                "time_min": est(self.time_min), "time_likely": est(self.time_likely), "time_max": est(self.time_max),
                "time_with_kvm": est(self.time_kvm),
                "noise": [{"workload_kind": n.workload_kind, "backend": n.backend, "host": n.host, "cv": n.cv,
                           "cells": n.cells, "runs": n.runs, "runs_needed": n.runs_needed(self.precision)}
                          for n in self.noise],
                "precision": self.precision, "history": self.history_source,
                "typical_noise": self.typical_text() if self.unseen else None}


def forecast(plan: Plan, history: Sequence[HistoryRun], host: str, history_source: str) -> Forecast:
    """The forecast of ``plan`` from the results store's ``history`` (empty: none)."""
    model = TimeModel(history)
    precision = plan.auto.precision if plan.auto is not None else AUTO_PRECISION
    seen = noise_seen(history, host)
    kinds = list(dict.fromkeys((c.workload_kind, c.backend) for c in plan.cells))
    noise = [seen[k] for k in kinds if k in seen]
    unseen = [k for k in kinds if k not in seen]
    guests = any(job.backend == "guest" for job in plan.jobs)
    if plan.auto is None:
        everything = model.estimate(plan.jobs)
        return Forecast(len(plan.runs), len(plan.runs), everything, everything, precision, noise, unseen,
                        fixed_n=plan.repetitions, history_source=history_source,
                        time_kvm=model.estimate(plan.jobs, kvm=True) if guests else None)
    rule = plan.auto
    first = _only(plan.jobs, lambda r: r.repetition < rule.min_n)
    out = Forecast(sum(len(j.runs) for j in first), len(plan.runs), model.estimate_by_pass(first),
                   model.estimate_by_pass(plan.jobs), precision, noise, unseen, history_source=history_source,
                   runs_max_per_cell=rule.max_n,
                   time_kvm=model.estimate_by_pass(plan.jobs, kvm=True) if guests else None)
    if not unseen:
        likely: dict[str, int] = {}
        for cell in plan.cells:
            needed = runs_for_precision(seen[(cell.workload_kind, cell.backend)].cv, precision, rule.max_n)
            likely[cell.id] = min(max(needed or rule.max_n, rule.min_n), rule.max_n)
        out.runs_likely = sum(likely.values())
        out.time_likely = model.estimate_by_pass(_only(plan.jobs, lambda r: r.repetition < likely[r.cell.id]))
    return out


def history_of(results: Path) -> tuple[list[HistoryRun], str]:
    """The runs stored in ``results`` (read-only), and where they came from; none, saying
    so, when there is no results store there."""
    from .store import DB_NAME, Store

    if not (results / DB_NAME).is_file():
        return [], (f"no results in {results} yet: times are the workloads' stated runtimes and fslab's built-in "
                    "priors for setup, layout and guest boots (fslab.priors; earlier studies in another results "
                    "directory are read with -r DIR)")
    with Store(results, read_only=True) as store:
        rows = store.history()
        studies = len({r["study_id"] for r in rows})
    return rows, f"{counted(len(rows), 'run')} of {counted(studies, 'study', 'studies')} in {results}"
