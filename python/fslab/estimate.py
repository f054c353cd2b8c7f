"""How long runs take: estimates of a study's time from the times runs of the same workload
and backend took — this study's runs as they arrive, and the earlier studies in the
results store — with each job's setup (making the device and file system; a guest's
boot) counted once per job, and what each estimate rests on.

An average over all runs so far misleads in a study that mixes 5-second host runs with
2-minute guest runs; here every run is estimated from its own kind:

1. the same cell (same file system, workload parameters, backend) timed before;
2. the same workload parameters on the same backend, on any file system;
3. the workload's stated runtime (a time-based fio job), plus the overhead a run adds to
   it on its backend as measured on fslab's development machine (fslab.priors);
4. the most the workload takes by its parameters when it may end sooner (fio's runtime
   without time_based), plus that overhead's upper quartile: counted apart, as "up to";
5. else no basis: the run is counted apart, never as zero seconds silently.

A job's setup is the gap between the end of the previous run and its first run's start
(mkfs, mount, aging, a guest's boot, and the previous job's teardown), by backend and file
system, else by backend, else the built-in prior for that backend and file system
(fslab.priors: measured there, said so in the text). The range given is what the sum would be if every run and setup
took as long as the quicker or the slower quarter of its kind did.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .priors import (
    GUEST_IN_BOOT,
    GUEST_RUN_OVERHEAD,
    GUEST_RUN_OVERHEAD_REUSED,
    GUEST_SETUP,
    GUEST_SETUP_IN_BOOT,
    GUEST_SETUP_KVM,
    HOST_RUN_OVERHEAD,
    HOST_RUN_OVERHEAD_REUSED,
    HOST_SETUP_OTHER,
    run_overhead_prior,
    setup_prior,
)
from .stored import STATUS_OK

if TYPE_CHECKING:
    from .jobdata.model import Cell, Job, Run
    from .jobdata.record import RunRecord
    from .stored import HistoryRun

# A gap longer than this before a job's first run is not setup: the study was stopped and
# resumed later (a guest under TCG that ages its image takes minutes; not half an hour).
MAX_SETUP_S = 1800.0


class _Seen:
    """Durations of one kind, from this study and from earlier ones."""

    def __init__(self) -> None:
        self.study: list[float] = []
        self.history: list[float] = []
        self._stats: tuple[float, float, float] | None = None

    def add(self, seconds: float, own: bool) -> None:
        (self.study if own else self.history).append(seconds)
        self._stats = None

    @property
    def values(self) -> list[float]:
        return self.study + self.history

    def stats(self) -> tuple[float, float, float]:
        """(mean, low, high), seconds; kept until a value comes. The range is the lower and
        upper quartile, widened to hold the mean: one slow run among quick ones pulls the
        mean above the upper quartile, and a range that leaves out the estimate misleads."""
        if self._stats is None:
            data = np.asarray(self.values, float)
            mean = float(data.mean())
            self._stats = (mean, min(mean, float(np.percentile(data, 25))), max(mean, float(np.percentile(data, 75))))
        return self._stats


def _params_key(params: Any) -> str:
    return json.dumps(params, sort_keys=True, default=str)


@dataclass
class TimeEstimate:
    """The time of some runs (seconds), with the range and what it rests on."""

    seconds: float = 0.0
    low: float = 0.0
    high: float = 0.0
    runs: int = 0
    from_study: int = 0  # runs whose kind this study has timed
    from_history: int = 0  # runs timed only in earlier studies of the results directory
    from_declared: int = 0  # only the workload's stated runtime: layout not included (a guest's)
    from_prior: int = 0  # the stated runtime plus the built-in prior of a host run's overhead
    reused_layouts: int = 0  # of from_prior: runs on files an earlier run laid out (reuse_layout)
    prior_in_guest: int = 0  # of from_prior: guest runs (the text names only the priors it used)
    reused_in_guest: int = 0  # of reused_layouts: guest runs
    unknown: int = 0  # no basis at all: not in ``seconds``
    capped: int = 0  # ended by their runtime or their work (fio's runtime without time_based): not in ``seconds``
    capped_s: float = 0.0  # their runtime plus the upper quartile of a run's overhead (its prior): about their most
    capped_in_guest: int = 0  # of capped: guest runs (whose overhead prior spans two machines)
    jobs: int = 0
    setups_unknown: int = 0  # jobs whose setup was never timed and has no prior: not in ``seconds``
    setups_prior: int = 0  # jobs whose setup was never timed here: the built-in prior is in ``seconds``
    guest_boots: int = 0  # guest jobs that boot a guest (in ``seconds`` when their setup was timed)
    guest_boots_untimed: int = 0
    guest_in_boot: int = 0  # guest jobs that run in the guest of the guest job before them
    guest_in_boot_untimed: int = 0
    kvm_guest_jobs: int = 0  # guest jobs as assumed under KVM (GUEST_SETUP_KVM, a host run's overhead)

    def add(self, other: TimeEstimate) -> TimeEstimate:
        return TimeEstimate(**{name: getattr(self, name) + getattr(other, name) for name in self.__dataclass_fields__})

    def _least(self) -> str:
        """'at least about 4 min' for an estimate with parts not timed; not 'at least about
        0 s' when what is counted rounds to nothing."""
        counted = duration_text(self.seconds)
        if counted == "0 s":
            return "not known yet (what is counted takes under a second)"
        return f"at least about {counted}"

    def short(self) -> str:
        """'about 4 min (3–5 min)', 'at least about ...' when some parts have no basis, 'up
        to about ...' when every run may end sooner: for a progress line."""
        if self.runs == 0:
            return "nothing left"
        if self.unknown == self.runs:
            return "time not known yet"
        if self.capped_only:
            return f"up to about {duration_text(self.seconds + self.capped_s)}"
        if self.capped and self.runs == self.capped + self.unknown:
            return f"up to about {duration_text(self.seconds + self.capped_s)} and what is not timed"
        if not self.complete:  # (a range would reach below the least)
            return self._least()
        text = f"about {duration_text(self.seconds)}"
        if self.high - self.low >= 1 and duration_text(self.low) != duration_text(self.high):
            text += f" ({duration_text(self.low)}–{duration_text(self.high)})"
        return text

    def at_most(self) -> str:
        """The time with every run that may end sooner taken at about its most, for an auto
        study's max_repetitions: 'at most about 7 min (5–9 min)', with what it leaves out."""
        low, mean, high = (v + self.capped_s for v in (self.low, self.seconds, self.high))
        if self.runs == self.unknown:
            return "time not known yet"
        text = f"at most about {duration_text(mean)}"
        if high - low >= 1 and duration_text(low) != duration_text(high):
            text += f" ({duration_text(low)}–{duration_text(high)})"
        left = self.left_out()
        return text + (f"; {', '.join(left)} not included" if left else "")

    def left_out(self) -> list[str]:
        """What the sum leaves out, each in a few words."""
        out = []
        if self.unknown:
            out.append(f"{self.unknown} run{'s' * (self.unknown != 1)} with nothing to go by")
        if self.setups_unknown:
            out.append(f"setting up {self.setups_unknown} file system{'s' * (self.setups_unknown != 1)}")
        if self.from_declared:
            out.append(f"the layout of {self.from_declared} run{'s' * (self.from_declared != 1)}")
        return out

    @property
    def upper_seconds(self) -> float:
        """``seconds`` with the runs that may end sooner at about their most."""
        return self.seconds + self.capped_s

    @property
    def leaves_out(self) -> bool:
        """Whether some run or setup is not in the sum (no basis), or only in part (a stated
        runtime without layout)."""
        return bool(self.left_out())

    @property
    def complete(self) -> bool:
        """Whether every run and setup counted rests on a measured time or a prior (else
        ``seconds`` is a lower bound: stated runtimes leave out layout and setup, untimed
        parts and runs that may end sooner are out)."""
        return not (self.leaves_out or self.capped)

    @property
    def capped_only(self) -> bool:
        """Every run may end sooner than its runtime, every setup is counted: the sum with
        those runtimes is about the most the runs take, not the least."""
        return self.capped == self.runs and not self.leaves_out

    def text(self) -> str:
        """'about 41 min (35–52 min, ...): 300 runs like ones timed in this study, 100 like
        ones timed in earlier studies here; 12 guest boots included' — or 'at least about
        5 min: ...' with what is left out and how much it may add."""
        if self.runs == 0:
            return "nothing left to run"
        if self.unknown == self.runs:
            if self.runs == 1:
                return "not known: the run has not been timed here and does not state its runtime"
            return f"not known: none of the {self.runs} runs has been timed here and none states its runtime"
        if self.capped and self.runs == self.capped + self.unknown:
            # nothing but runs that may end sooner (and untimed parts): a most, said as such
            head = f"up to about {duration_text(self.seconds + self.capped_s)}"
            if not self.capped_only:
                head += " and what is not timed (below)"
            each = "each taken" if self.capped != 1 else "taken"
            parts = [f"{head}: {self._capped_text()}, {each} at that runtime plus the upper quartile of what a "
                     f"run adds ({self._capped_prior_text()})"]
            return "; ".join(parts + self._setup_parts() + self._unknown_parts())
        head = f"about {duration_text(self.seconds)}" if self.complete else self._least()
        basis = []
        if self.from_study:
            basis.append(f"{self.from_study} run{'s' * (self.from_study != 1)} like ones timed in this study")
        if self.from_history:
            basis.append(f"{self.from_history} like ones timed in earlier studies here")
        if self.from_prior:
            basis.append(f"{self.from_prior} from {_their(self.from_prior)} stated runtime plus what a run adds for "
                         "layout and start "
                         f"({self._overhead_priors_text()}; built-in priors measured on fslab's development "
                         + ("machines, a guest's from the quicker quarter of runs on the faster one to the slower "
                            "quarter on the slower)" if self.prior_in_guest else "machine)"))
        if self.from_declared:
            basis.append(f"{self.from_declared} from {_their(self.from_declared)} stated runtime only (file layout "
                         "not included)")
        if self.high - self.low >= 1 and duration_text(self.low) != duration_text(self.high):
            # "at least about 15 s (10–29 s)" would read as a least below its own range
            counted = "" if self.complete else " for what is counted"
            head += (f" ({duration_text(self.low)}–{duration_text(self.high)}{counted}, from the quicker and "
                     "slower quarters of runs and set-ups)")
        parts = [head + ": " + ", ".join(basis)] if basis else [head + " (setting up only)"]
        if self.capped:
            parts.append(f"{self._capped_text()}: not included, up to about {duration_text(self.capped_s)} more "
                         f"(each at that runtime plus the upper quartile of what a run adds, "
                         f"{self._capped_prior_text()})")
        return "; ".join(parts + self._setup_parts() + self._unknown_parts())

    def _capped_text(self) -> str:
        one = self.capped == 1
        their = "its" if one else "their"
        return (f"{self.capped} run{'' if one else 's'} that stop{'s' if one else ''} at {their} stated runtime or "
                f"when {their} work is done, whichever comes first (fio's runtime without time_based)")

    def _capped_prior_text(self) -> str:
        return ("a built-in prior measured on fslab's development "
                + ("machines" if self.capped_in_guest else "machine"))

    def _unknown_parts(self) -> list[str]:
        if not self.unknown:
            return []
        one = self.unknown == 1
        return [f"{self.unknown} run{'' if one else 's'} with nothing to go by ({'it ends' if one else 'they end'} "
                f"when {'its' if one else 'their'} work is done), not counted"]

    def _setup_parts(self) -> list[str]:
        """What the estimate says of guest boots and file-system setups."""
        parts: list[str] = []
        timed_boots = self.guest_boots - self.guest_boots_untimed
        if timed_boots:
            parts.append(f"{timed_boots} guest boot{'s' * (timed_boots != 1)} included, as timed here")
        if self.guest_boots_untimed and self.kvm_guest_jobs:
            n = self.guest_boots_untimed
            parts.append(f"{n} guest boot{'s' * (n != 1)} included at {GUEST_SETUP_KVM.range_text()} each, as "
                         "assumed under KVM (not measured), a guest run's overhead at a host run's")
        elif self.guest_boots_untimed:
            n = self.guest_boots_untimed
            # Without KVM (TCG) the built-in prior; with KVM the assumed one (fslab.priors).
            together = (f"; TCG: {duration_text(n * GUEST_SETUP.low)}–{duration_text(n * GUEST_SETUP.high)} "
                        "together" if n > 1 else "")
            parts.append(f"{n} guest boot{'s' * (n != 1)} not timed here yet, included at {GUEST_SETUP.range_text()} "
                         f"each without KVM (a built-in prior{together}); with KVM (used where /dev/kvm "
                         f"boots a stock kernel) {GUEST_SETUP_KVM.range_text()} each")
        if self.guest_in_boot:
            n = self.guest_in_boot
            parts.append(f"{n} guest job{'s' * (n != 1)} in the guest of the job before {'them' if n != 1 else 'it'} "
                         "(no boot)" + (f", {self.guest_in_boot_untimed} set up {self._in_boot_setup_text()}"
                                        if self.guest_in_boot_untimed else ""))
        setups = self.setups_prior - self.guest_boots_untimed - self.guest_in_boot_untimed
        if setups > 0:  # (guest boots always have a prior, so they are all among setups_prior)
            parts.append(f"setting up {setups} file system{'s' * (setups != 1)} not timed here yet, included from "
                         "built-in priors (1–7 s each on the host)")
        if self.setups_unknown:
            parts.append(f"setting up {self.setups_unknown} file system{'s' * (self.setups_unknown != 1)} not timed "
                         "here yet, not included (no built-in prior for this device)")
        return parts

    def _in_boot_setup_text(self) -> str:
        if self.kvm_guest_jobs:  # (fslab.priors.setup_prior: the host's mkfs and mount)
            return f"as on the host (each file system's built-in prior, within {HOST_SETUP_OTHER.range_text()})"
        return f"at {GUEST_SETUP_IN_BOOT.range_text()} each (a built-in prior, TCG)"

    def _overhead_priors_text(self) -> str:
        """The run-overhead priors the estimate used: the host's, the guest's, or both."""
        guest, guest_reused = self.prior_in_guest, self.reused_in_guest
        host, host_reused = self.from_prior - guest, self.reused_layouts - guest_reused
        parts = [text for count, text in ((host, f"{HOST_RUN_OVERHEAD.range_text()} on the host"),
                                          (guest, f"{GUEST_RUN_OVERHEAD.range_text()} in a TCG guest")) if count]
        reused = [text for count, text in ((host_reused, f"{HOST_RUN_OVERHEAD_REUSED.range_text()} on the host"),
                                           (guest_reused, f"{GUEST_RUN_OVERHEAD_REUSED.range_text()} in a guest"))
                  if count]
        if reused:
            parts.append(f"{self.reused_layouts} on files an earlier run of their pass laid out: " + ", ".join(reused))
        return ", ".join(parts)


def _their(n: int) -> str:
    return "its" if n == 1 else "their"


def duration_text(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class TimeModel:
    """Durations of runs and job setups seen so far; ``estimate`` says how long jobs will take."""

    def __init__(self, history: Iterable[HistoryRun] = (), study_id: int | None = None, guests_kept: bool = True):
        # whether the executor runs consecutive guest jobs in one boot (the local one
        # does; a Dask worker runs each job in a process, and so a guest, of its own)
        self.guests_kept = guests_kept
        self._runs: dict[tuple[str, ...], _Seen] = {}
        self._setups: dict[tuple[str, ...], _Seen] = {}
        self._stated: dict[str, tuple[float | None, float | None]] = {}
        self._params: dict[str, str] = {}  # cell id -> its parameters as a key
        self._layouts: dict[str, str | None] = {}  # cell id -> the files it lays out (reuse_layout)
        previous: HistoryRun | None = None
        for run in history:  # ordered by study, then start
            own = run["study_id"] == study_id
            wall = run["finished_at"] - run["started_at"]
            if wall >= 0 and run["ok"]:
                self._note_run(run["cell_id"], run["workload_kind"], _params_key(json.loads(run["params_json"])),
                               run["backend"], wall, own)
            kind = setup_kind(run["backend"], run.get("jobs_before_in_boot"))
            if previous is None or previous["study_id"] != run["study_id"]:
                # A study's first job: set up from the study's start, as Countdown counts it
                # while the study runs (so a study of one booting guest job times its boot).
                self._note_setup(kind, run["fs_type"], run["started_at"] - run["study_created_at"], own)
            elif previous["job"] != run["job"]:
                self._note_setup(kind, run["fs_type"], run["started_at"] - previous["finished_at"], own)
            previous = run

    def _note_run(self, cell_id: str, kind: str, params: str, backend: str, seconds: float, own: bool) -> None:
        for key in (("cell", cell_id), ("workload", kind, params, backend)):
            self._runs.setdefault(key, _Seen()).add(seconds, own)

    def _note_setup(self, backend: str, fs_type: str, seconds: float, own: bool) -> None:
        if not 0 <= seconds <= MAX_SETUP_S:
            return
        for key in (("fs", backend, fs_type), ("backend", backend)):
            self._setups.setdefault(key, _Seen()).add(seconds, own)

    def _key_of(self, cell: Cell) -> str:
        if cell.id not in self._params:
            self._params[cell.id] = _params_key(cell.params)
        return self._params[cell.id]

    def learn(self, cell: Cell, record: RunRecord, setup_s: float | None, run_time: bool = True) -> None:
        """A run of this study just ended (``setup_s``: the gap before it, when it was the
        first run of its job; ``run_time``: whether its own time counts, not a failure's)."""
        if run_time:
            self._note_run(cell.id, cell.workload_kind, self._key_of(cell), cell.backend, record.wall_s, True)
        if setup_s is not None:
            in_boot = (record.provenance.get("guest") or {}).get("jobs_before_in_boot")
            self._note_setup(setup_kind(cell.backend, in_boot), cell.fs_type, setup_s, True)

    def _stated_s(self, cell: Cell) -> tuple[float | None, float | None]:
        """(runtime, cap) its parameters state (Workload.declared_runtime_s, runtime_cap_s),
        once per workload and parameters."""
        key = cell.workload_kind + self._key_of(cell)
        if key not in self._stated:
            from .workloads import WORKLOADS

            workload = WORKLOADS.get(cell.workload_kind) if cell.workload_kind in WORKLOADS else None
            self._stated[key] = ((None, None) if workload is None else
                                 (workload.declared_runtime_s(cell.params), workload.runtime_cap_s(cell.params)))
        return self._stated[key]

    def _layout_key(self, cell: Cell) -> str | None:
        """Workload.layout_key of the cell, once per cell (asked at every progress line)."""
        if cell.id not in self._layouts:
            from .workloads import WORKLOADS

            self._layouts[cell.id] = (WORKLOADS.get(cell.workload_kind).layout_key(cell.params)
                                      if cell.workload_kind in WORKLOADS else None)
        return self._layouts[cell.id]

    def run_estimate(self, cell: Cell, reused_layout: bool = False,
                     kvm: bool = False) -> tuple[str, float, float, float] | None:
        """(basis, mean, low, high) of one run of ``cell``; None when nothing says.
        ``reused_layout``: the run uses files an earlier run of its job laid out; ``kvm``:
        a guest run as assumed under KVM (built-in priors: the times seen here may be TCG's)."""
        keys = () if kvm and cell.backend == "guest" else (
            ("cell", cell.id), ("workload", cell.workload_kind, self._key_of(cell), cell.backend))
        for key in keys:
            seen = self._runs.get(key)
            if seen is not None and seen.values:
                return ("study" if seen.study else "history", *seen.stats())
        declared, cap = self._stated_s(cell)
        overhead = run_overhead_prior(cell.backend, cell.workload_kind, reused_layout, kvm)
        if declared is None:
            # fio's runtime without time_based: the run may end sooner, so this is about its most
            if cap is None or overhead is None:
                return None
            return ("capped", cap + overhead.high, cap + overhead.high, cap + overhead.high)
        if overhead is None:
            return ("declared", declared, declared, declared)
        return ("prior", declared + overhead.mean, declared + overhead.low, declared + overhead.high)

    def setup_estimate(self, backend: str, fs_type: str) -> tuple[float, float, float] | None:
        for key in (("fs", backend, fs_type), ("backend", backend)):
            seen = self._setups.get(key)
            if seen is not None and seen.values:
                return seen.stats()
        return None

    def estimate_by_pass(self, jobs: Sequence[Job], kvm: bool = False) -> TimeEstimate:
        """The time of an auto study's ``jobs``: pass after pass, each a batch of its own
        (fslab.runner._run_passes), so a job is set up and a guest kept for consecutive
        jobs is booted again in each pass."""
        total = TimeEstimate()
        for index in sorted({run.repetition for job in jobs for run in job.runs}):
            in_pass = functools.partial(_in_pass, index)
            total = total.add(self.estimate([job.with_runs(runs, job.resumed_without) for job in jobs
                                             if (runs := tuple(filter(in_pass, job.runs)))], kvm=kvm))
        return total

    def estimate(self, jobs: Sequence[Job], started: frozenset[str] = frozenset(), kvm: bool = False) -> TimeEstimate:
        """The time ``jobs`` will take; a job whose id is in ``started`` is set up already.
        ``kvm``: the guest jobs as assumed under KVM (built-in priors only)."""
        out = TimeEstimate()
        previous_guest: tuple[str, int, str] | None = None  # the guest the last guest job ran in
        for job in jobs:
            out.jobs += 1
            guest_key = _guest_key(job)
            if job.id not in started:
                in_boot = self.guests_kept and guest_key is not None and guest_key == previous_guest
                kind = GUEST_IN_BOOT if in_boot else job.backend
                boots = job.backend == "guest" and not in_boot
                out.guest_boots += boots
                out.guest_in_boot += in_boot
                assumed = kvm and job.backend == "guest"
                out.kvm_guest_jobs += assumed
                setup = None if assumed else self.setup_estimate(kind, job.cell.fs_type)
                if setup is None:  # nothing timed here: the built-in prior (fslab.priors), said so
                    prior = setup_prior(kind, job.cell.fs_type, job.settings.device.get("kind"), assumed)
                    out.guest_boots_untimed += boots
                    out.guest_in_boot_untimed += in_boot
                    if prior is None:
                        out.setups_unknown += 1
                    else:
                        setup = prior.as_tuple()
                        out.setups_prior += 1
                if setup is not None:
                    out.seconds, out.low, out.high = out.seconds + setup[0], out.low + setup[1], out.high + setup[2]
            previous_guest = guest_key  # a host job between powers the guest off (LocalExecutor)
            laid_out: set[str] = set()  # with reuse_layout: the layouts this job has made
            for run in job.runs:
                out.runs += 1
                key = self._layout_key(run.cell) if job.settings.reuse_layout else None
                reused = key is not None and key in laid_out
                known = self.run_estimate(run.cell, reused_layout=reused, kvm=kvm)
                if key is not None:
                    laid_out.add(key)
                if known is None:
                    out.unknown += 1
                    continue
                basis, mean, low, high = known
                if basis == "capped":
                    out.capped += 1
                    out.capped_s += mean
                    out.capped_in_guest += run.cell.backend == "guest" and not kvm
                    continue
                out.seconds, out.low, out.high = out.seconds + mean, out.low + low, out.high + high
                if basis == "study":
                    out.from_study += 1
                elif basis == "history":
                    out.from_history += 1
                elif basis == "prior":
                    out.from_prior += 1
                    out.reused_layouts += reused
                    in_guest = run.cell.backend == "guest" and not kvm  # (under KVM: the host's priors)
                    out.prior_in_guest += in_guest
                    out.reused_in_guest += reused and in_guest
                else:
                    out.from_declared += 1
        return out


def _in_pass(index: int, run: Run) -> bool:
    return run.repetition == index


def setup_kind(backend: str, jobs_before_in_boot: int | None) -> str:
    """How a job's setup is counted: a guest job in the guest of the one before it (no
    boot, fslab.backends.guest.session) apart from one that booted."""
    return GUEST_IN_BOOT if backend == "guest" and jobs_before_in_boot else backend


def _guest_key(job: Job) -> tuple[str, int, str] | None:
    """What decides whether a guest job runs in the guest of the guest job before it (the
    local executor's sessions): kernel, memory and device (an aged image is copied onto
    the disk of the same guest); None for a job that runs on the host."""
    if job.backend != "guest":
        return None
    return (job.settings.guest_kernel, job.settings.guest_memory, json.dumps(job.settings.device, sort_keys=True))


class Countdown:
    """The time left of the jobs handed to an executor, kept as their records arrive: each
    record teaches the model its run's time and, for the first run of a job, the job's
    setup (the gap since the previous record, or since the batch started)."""

    def __init__(self, model: TimeModel):
        self.model = model
        self._jobs: list[Job] = []
        self._done: set[tuple[str, int]] = set()
        self._started: set[str] = set()
        self._last_end = 0.0
        self._last_job: str | None = None

    def start(self, jobs: Sequence[Job], now: float) -> None:
        self._jobs = list(jobs)
        self._done.clear()
        self._started.clear()
        self._last_end, self._last_job = now, None

    def record(self, cell: Cell, record: RunRecord) -> None:
        job = record.provenance.get("job")
        setup = None
        if job != self._last_job and job not in self._started:
            setup = record.started_at - self._last_end
            if job is not None:
                self._started.add(str(job))
        ok = record.status == STATUS_OK
        if ok or setup is not None:
            self.model.learn(cell, record, setup, run_time=ok)
        self._last_end, self._last_job = max(self._last_end, record.finished_at), job
        self._done.add((record.cell_id, record.repetition))

    def left(self) -> TimeEstimate:
        remaining = []
        for job in self._jobs:
            runs = tuple(r for r in job.runs if (r.cell.id, r.repetition) not in self._done)
            if runs:
                remaining.append(job.with_runs(runs, job.resumed_without))
        return self.model.estimate(remaining, frozenset(self._started))
