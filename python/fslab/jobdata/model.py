"""A job as data: its cells, its runs, the settings a study's jobs share and what the user
allowed. Everything round-trips through JSON (``Job.to_json``/``Job.from_json``), so a job
runs in another process, a guest or on another machine with nothing beside it: the texts
of the files a workload reads (a fio job file and the files it includes) travel inside
its cells (``Cell.inputs``) and are part of each cell's identity.
"""

from __future__ import annotations

from typing import Any

from ..datarecords import asdict, datarecord, field, replace
from .terms import Params, workload_label  # Params: a workload's parameters (the plug-in's)

JOB_FORMAT = "fslab-job/2"
# fslab-job/1 (before 0.2): a fio job file was read from ``settings.study_dir`` at run time.
OLD_JOB_FORMATS = ("fslab-job/1",)


@datarecord(frozen=True)
class Grant:
    """What the user allowed for this study's device, carried in every job: the real
    devices confirmed with --destroy-data-on, and the identity preflight recorded of a
    handed-over disk (so a run refuses a different disk at the same path)."""

    allowed: frozenset[str] = frozenset()
    identity: dict[str, str] | None = None


NO_GRANT = Grant()  # nothing confirmed, no identity: image and fake devices need none


@datarecord(frozen=True)
class Cell:
    """One file system x one workload x one combination of axis values."""

    id: str
    filesystem: str  # the section name (a label, e.g. "ext4-noatime")
    fs_type: str  # the registered file system it makes
    mkfs: tuple[str, ...]
    mount: tuple[str, ...]
    workload: str  # the workload's name in the study
    workload_kind: str
    params: Params  # the workload's parameters with this cell's axis values
    axes: Params  # just this cell's axis values (for labels and grouping)
    backend: str
    memory_bytes: int | None = None  # memory-cgroup limit for the workload
    timeout_s: float | None = None
    # The metric reports show first, chosen by the workload at plan time and stored, so
    # reports need no workload plug-in.
    primary_metric: str = ""
    aging: dict[str, Any] | None = None  # fslab.aging_option.AgingOption as data; None: not aged
    kernel: str | None = None  # guest cells: the kernel the guest boots ("6.1", "6.12", a path)
    guest_memory: int | None = None  # guest cells: the guest's memory (bytes; --quick scales it)
    # The files the workload reads, read when the study was planned: name -> text. A job
    # needs nothing beside it, and an edited job file makes another cell.
    inputs: dict[str, str] = field(default_factory=dict)
    # A --quick cell: the parameters the workload's ``quick`` changed, name -> full value,
    # so a report says what was scaled without knowing any workload's parameter names.
    quick_scaled: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return workload_label(self.workload, self.axes)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["mkfs"] = list(self.mkfs)
        data["mount"] = list(self.mount)
        if not self.inputs:  # cells without input files keep the JSON they always had
            del data["inputs"]
        if not self.quick_scaled:  # likewise full-size cells
            del data["quick_scaled"]
        return data

    @staticmethod
    def from_json(data: dict[str, Any]) -> Cell:
        fields = dict(data)
        fields["mkfs"] = tuple(data["mkfs"])
        fields["mount"] = tuple(data["mount"])
        fields["inputs"] = dict(data.get("inputs") or {})
        fields["quick_scaled"] = dict(data.get("quick_scaled") or {})
        return Cell(**fields)


@datarecord(frozen=True)
class Run:
    """One repetition of one cell."""

    cell: Cell
    repetition: int  # 0-based
    sequence: int = 0  # position of the run in the study's execution order

    @property
    def key(self) -> str:
        """``<cell id>-r<repetition>``: names the run's artifact folder. Repetitions count
        from 1 wherever a person reads them (console, export, paths)."""
        return run_key(self.cell.id, self.repetition)


def run_key(cell_id: str, repetition: int) -> str:
    return f"{cell_id}-r{repetition + 1}"


@datarecord(frozen=True)
class JobSettings:
    """What every job of a study shares besides its runs: all plain data."""

    device: dict[str, Any]  # the [device] section: {"kind": ..., its plug-in's parsed fields}
    drop_caches: bool = True
    fresh: str = "run"
    reuse_layout: bool = False  # runs of a pass with the same files run on one layout
    order_seed: int = 0
    trace: bool = False  # block-layer trace of every run
    simulate: tuple[str, ...] = ()  # device models each traced run is replayed on
    # The study's own models among them: name -> {"base": shipped model, parameter: value}.
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    guest_kernel: str = "6.1"  # the guest backend's kernel: "6.1", "6.12" or a path
    guest_memory: int = 1 << 30  # the guest's memory: its page-cache knob
    guest_memory_full: int | None = None  # the study's guest_memory when --quick scaled it down
    allow_exec: bool = False  # workload options that run programs are allowed (--allow-exec)
    machine_class: str | None = None  # Dask placement: only workers of this class run the job
    # The guest backend copied an image aged once onto the job's disk: its facts
    # (aged_images.AgedCopy.to_dict), so the job mounts it as it is, without mkfs or aging.
    preaged: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "simulate": list(self.simulate)}

    @staticmethod
    def from_json(data: dict[str, Any]) -> JobSettings:
        fields = dict(data)
        fields["simulate"] = tuple(fields.get("simulate", ()))
        return JobSettings(**fields)


@datarecord(frozen=True)
class Job:
    """Runs executed on one file-system instance, in this order, by one backend."""

    id: str
    backend: str
    runs: tuple[Run, ...]
    settings: JobSettings
    grant: Grant = field(default_factory=Grant)
    # Runs of the same pass already stored before an interruption: on resume the rest of
    # the pass runs on a new file system without them, which provenance must say.
    resumed_without: tuple[str, ...] = ()

    @property
    def cell(self) -> Cell:
        return self.runs[0].cell

    def to_json(self) -> dict[str, Any]:
        return {
            "format": JOB_FORMAT,
            "id": self.id,
            "backend": self.backend,
            "settings": self.settings.to_json(),
            "grant": {"allowed": sorted(self.grant.allowed), "identity": self.grant.identity},
            "runs": [{"cell": r.cell.to_json(), "repetition": r.repetition, "sequence": r.sequence}
                     for r in self.runs],
            "resumed_without": list(self.resumed_without),
        }

    @staticmethod
    def from_json(data: Any) -> Job:
        """The inverse of ``to_json``. Raises ValueError on another format or a job with
        no runs (a file that is not a job)."""
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        if found in OLD_JOB_FORMATS:
            raise ValueError(f"written by an older fslab (format {found!r}, expected {JOB_FORMAT!r}): "
                             "plan it again with `fslab plan STUDY --jobs DIR`")
        if not isinstance(data, dict) or found != JOB_FORMAT:
            raise ValueError(f"not an fslab job (format {found!r}, expected {JOB_FORMAT!r})")
        if not data.get("runs"):
            raise ValueError("the job has no runs")
        return Job(
            id=str(data["id"]), backend=str(data["backend"]),
            runs=tuple(Run(Cell.from_json(r["cell"]), int(r["repetition"]), int(r["sequence"]))
                       for r in data["runs"]),
            settings=JobSettings.from_json(data["settings"]),
            grant=Grant(frozenset(data["grant"]["allowed"]), data["grant"]["identity"]),
            resumed_without=tuple(data.get("resumed_without", ())),
        )

    def with_runs(self, runs: tuple[Run, ...], resumed_without: tuple[str, ...]) -> Job:
        return replace(self, runs=runs, resumed_without=resumed_without)
