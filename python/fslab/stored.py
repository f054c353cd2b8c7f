"""What the results store gives back: typed records of a stored study, its cells, its runs
and their metrics. Readers (the report, exports, `fslab compare`) depend on these shapes,
not on the store's SQL nor on the job's classes, and this module imports nothing but the
standard library (and ``fslab.jobdata.terms``, the words it shares with the job), so
reading results stays light.

- ``StoredCell``: the JSON a plan's cell wrote when its study was created, as it was
  written (keys a newer fslab added are ``NotRequired``: rows written before lack them);
- ``StoredRun``: one run as its record was stored, with its cell and metrics;
- ``StoredMetric``: a number (or None, with the reason in ``note``), its unit and its
  better direction, stored so that no plug-in is needed to read it;
- ``StudyRow``: a stored study; ``paper`` names the published study it reproduces.

Repetitions count from 0 here, as stored; people read ``repetition + 1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

# Params (a workload's parameters), STATUS_OK and workload_label are the job's words too:
# defined in fslab.jobdata.terms, which the job path imports without this module.
from .jobdata.terms import STATUS_OK as STATUS_OK
from .jobdata.terms import Params as Params
from .jobdata.terms import workload_label as workload_label

# What the run's job recorded about where and how it ran (host, backend, file system,
# device, tools, trace, predictions, ...): open-ended JSON whose keys grow with the job
# executor and differ between backends; readers take each fact with .get and say "—"
# where it is missing (fslab.report.provenance_facts).
Provenance = dict[str, Any]


class StoredMetric(TypedDict):
    value: float | None  # in the base unit; None: no number (``note`` says why, e.g. "+++++")
    unit: str
    note: str | None
    higher_is_better: bool | None  # None: stored by a version that did not record it


class AgingData(TypedDict):
    """fslab.aging_option.AgingOption as a cell stores it."""

    fill: float  # the target, measured as fill_by says
    # "data": file data as a fraction of the device; "statfs": blocks in use (absent: stored
    # before fill_by existed, when fill was a fraction of the blocks by statfs)
    fill_by: NotRequired[str]
    pattern: str  # "random-holes" | "churn"
    seed: int
    file_sizes: str
    rounds: int | None
    max_file_size: int  # bytes


class StoredCell(TypedDict):
    id: str
    filesystem: str  # the study's name for the entry (a label, e.g. "ext4-noatime")
    fs_type: str  # the registered file system it makes
    mkfs: list[str]
    mount: list[str]
    workload: str  # the workload's name in the study
    workload_kind: str
    params: Params
    axes: Params  # just this cell's axis values (labels and grouping)
    backend: str  # "host" | "guest"
    memory_bytes: int | None
    timeout_s: float | None
    primary_metric: str  # schema 2; the store's upgrade fills it in for older rows
    aging: NotRequired[AgingData | None]
    kernel: NotRequired[str | None]  # guest cells: the kernel the guest boots
    guest_memory: NotRequired[int | None]  # guest cells: bytes
    inputs: NotRequired[dict[str, str]]  # texts of the files the workload reads: name -> text
    quick_scaled: NotRequired[dict[str, Any]]  # --quick: the parameters quick() changed -> full value
    device: NotRequired[dict[str, Any]]  # the cell's own [device] section: kind and its fields


class StoredRun(TypedDict):
    run_id: int
    cell: StoredCell
    repetition: int  # from 0
    sequence: int  # position in the study's execution order
    status: str  # STATUS_OK or "failed"
    error: str | None
    started_at: float  # Unix time, seconds
    finished_at: float
    provenance: Provenance
    artifact_dir: str | None  # relative to the results directory
    metrics: dict[str, StoredMetric]
    retired_at: NotRequired[float]  # a failed attempt --retry-failed ran again (`fslab report --run` shows it)


class RetiredRun(TypedDict):
    """A failed run that ``--retry-failed`` ran again, kept as history (never reported as a
    result): its row as stored, provenance as JSON text."""

    id: int
    study_id: int
    cell_id: str
    repetition: int
    sequence: int
    status: str
    error: str | None
    started_at: float
    finished_at: float
    provenance_json: str
    artifact_dir: str | None  # moved to ``<run>.failed-<id>/``
    retired_at: float


class HistoryRun(TypedDict):
    """A stored run as estimates of time and noise read it (``Store.history``)."""

    study_id: int
    study_created_at: float  # Unix time: the study's start, where its first job's setup begins
    quick: bool
    cell_id: str
    workload: str
    workload_kind: str
    params_json: str  # the cell's parameters as stored (JSON text): a workload's identity
    backend: str
    fs_type: str
    ok: bool
    started_at: float  # Unix time, seconds: after the file system was made and mounted
    finished_at: float
    sequence: int
    job: str | None  # the job it ran in (one file-system instance)
    host: str | None  # the machine (a guest's: the machine its QEMU ran on)
    boot_s: float | None  # a guest run: how long its guest took to boot
    jobs_before_in_boot: int | None  # a guest run: jobs its guest ran before its own (0: it booted)
    value: float | None  # its cell's primary metric


class StudyFacts(TypedDict, total=False):
    """What was recorded about a study when it was created (absent in older rows)."""

    # The handed-over disks' identities, by path: JSON of fslab.devices.block.identity (older
    # rows: the one disk's identity itself, unkeyed).
    device_identity: dict[str, str] | None
    paper: str | None  # ``[study] paper``: the published study it reproduces
    inputs: dict[str, str]  # the files its workloads read, by case and name: their SHA-256 (fslab.identity)
    revisions: list[StudyRevision]  # changes --retry-failed adopted, oldest first
    auto: AutoFacts  # repetitions = "auto": what was decided after the last pass


class AutoCellFacts(TypedDict):
    n: int  # runs with a number of its primary metric
    runs: int  # runs made, failed ones included
    reason: str | None  # "precision" | "verdict" | "max" | "failing"; None: still repeating
    stopped_after_pass: int | None  # from 0
    relative_half_width: float | None  # of its 95% interval, over |mean|
    text: str  # why it stopped, in words ("precision reached at n = 6 (±4.1% ≤ ±5%)")


class AutoLookFacts(TypedDict):
    """One look at a comparison (fslab.analysis.sequential)."""

    n_a: int
    n_b: int
    fraction: float  # information fraction
    p_value: float | None  # Welch's; None: no spread, no test
    level: float  # the nominal level the alpha spending allowed this look
    significant: bool


class AutoPairFacts(TypedDict):
    """A comparison of two cells (ids ``a`` and ``b``) that decides when they stop."""

    a: str
    b: str
    alpha: float  # its share of the family's α
    kind: str  # "filesystems" (of one case) or "contrast"
    significant: bool
    final: bool  # no more looks: significant, answered without a verdict, or a side stopped
    looks: list[AutoLookFacts]
    text: str


class AutoFacts(TypedDict):
    """What an auto study decided after its last pass (fslab.stopping.Decisions), kept with
    the study (``StudyFacts.auto``): the rule, each cell's state and why it stopped, each
    comparison's looks."""

    rule: dict[str, Any]
    passes_done: int
    cells: dict[str, AutoCellFacts]
    pairs: list[AutoPairFacts]


class StudyRevision(TypedDict):
    """A change of the study file that --retry-failed adopted (fslab.identity.retry_plan),
    or --resume (a change that touches no run: the study's name, comments)."""

    at: float  # Unix time
    spec_text: str  # the text before the change
    spec_hash: str
    inputs: dict[str, str]
    changed: list[str]  # what changed, in words
    replaced_cells: dict[str, str]  # old cell id -> the cell that took its place
    by: NotRequired[str]  # "--resume": a change that touches no run (its name); absent: --retry-failed


class SkippedFilesystem(TypedDict):
    """A file system the plan left out, and why (e.g. this kernel cannot mount it)."""

    filesystem: str
    reason: str


@dataclass(frozen=True)
class StudyRow:
    id: int
    name: str
    source: str  # the study file's path, or "preset NAME"
    spec_hash: str
    quick: bool
    order: str
    seed: int
    fresh: str
    repetitions: int
    planned_runs: int
    skipped: list[SkippedFilesystem]
    host: dict[str, Any]
    status: str
    created_at: float
    finished_at: float | None
    spec_text: str
    facts: StudyFacts

    @property
    def paper(self) -> str | None:
        """The published study this study reproduces (``[study] paper``, e.g. "seed-003"),
        or None: sections that belong to a paper use its labels and test its claims only
        then. Recorded when the study was created; for a study stored before it was, the
        shipped preset it was run from says (a user's own file never had one)."""
        if "paper" in self.facts:
            return self.facts["paper"] or None
        return _preset_paper(self.source)


def _preset_paper(source: str) -> str | None:
    """The ``[study] paper`` of the shipped preset a source names ("preset seed-003"),
    read from the preset file; None for a study file or a preset that is no longer shipped."""
    # Imported here, not by the job entry (which imports this module): in a TCG guest,
    # cold, tomllib took 0.5 s of its import and importlib.resources 0.9 s (the latter is
    # still imported through pydantic's plugin loader while pydantic is on the job's path).
    import tomllib
    from importlib import resources

    name = source.removeprefix("preset ")
    if name == source:
        return None
    path = resources.files("fslab") / "presets" / f"{name}.toml"
    try:
        paper = tomllib.loads(path.read_text()).get("study", {}).get("paper")
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return str(paper) if paper else None
