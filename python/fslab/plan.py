"""Expanding a study into cells and runs, ordering the runs, and grouping them into jobs.

A cell is one file system x one workload x one combination of axis values. A run is one
repetition of one cell. Runs are grouped into jobs: the unit a backend executes, plain
data that travels as JSON (``Job.to_json``/``from_json``) to wherever it runs. With
``fresh = "run"`` every job is one run on a freshly made file system; with
``fresh = "repetition"`` a job is one pass of a file system's cells on one file system.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from .backends import choose_backend
from .devices import DEVICES, Grant
from .errors import SpecError
from .filesystems import FILESYSTEMS
from .spec import GUEST_MIN_MEMORY, DeviceSection, StudySpec, WorkloadSection
from .workloads import WORKLOADS, ParamError, data_bytes, quick_memory

JOB_FORMAT = "fslab-job/1"


@dataclass(frozen=True)
class Cell:
    id: str
    filesystem: str  # the section name (a label, e.g. "ext4-noatime")
    fs_type: str  # the registered file system it makes
    mkfs: tuple[str, ...]
    mount: tuple[str, ...]
    workload: str  # the workload's name in the study
    workload_kind: str
    params: dict[str, Any]  # the workload's parameters with this cell's axis values
    axes: dict[str, Any]  # just this cell's axis values (for labels and grouping)
    backend: str
    memory_bytes: int | None = None  # memory-cgroup limit for the workload
    timeout_s: float | None = None
    # The metric reports show first, chosen by the workload at plan time and stored, so
    # reports need no workload plug-in.
    primary_metric: str = ""
    aging: dict[str, Any] | None = None  # fslab.aging.AgingOption as data; None: not aged
    kernel: str | None = None  # guest cells: the kernel the guest boots ("6.1", "6.12", a path)
    guest_memory: int | None = None  # guest cells: the guest's memory (bytes; --quick scales it)

    @property
    def label(self) -> str:
        axes = " ".join(f"{k}={v}" for k, v in self.axes.items())
        return f"{self.workload}" + (f" [{axes}]" if axes else "")

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["mkfs"] = list(self.mkfs)
        data["mount"] = list(self.mount)
        return data

    @staticmethod
    def from_json(data: dict[str, Any]) -> Cell:
        fields = dict(data)
        fields["mkfs"] = tuple(data["mkfs"])
        fields["mount"] = tuple(data["mount"])
        return Cell(**fields)


@dataclass(frozen=True)
class Run:
    cell: Cell
    repetition: int
    sequence: int = 0  # position of the run in the study's execution order

    @property
    def key(self) -> str:
        # Repetitions count from 1 wherever a person reads them (console, export, paths).
        return f"{self.cell.id}-r{self.repetition + 1}"


@dataclass(frozen=True)
class JobSettings:
    """What every job of a study shares besides its runs: all plain data."""

    device: dict[str, Any]  # the [device] section: {"kind": ..., its own fields}
    drop_caches: bool = True
    fresh: str = "run"
    order_seed: int = 0
    trace: bool = False  # block-layer trace of every run
    simulate: tuple[str, ...] = ()  # device models each traced run is replayed on
    study_dir: str = "."  # where the study file lives, for relative job-file paths
    guest_kernel: str = "6.1"  # the guest backend's kernel: "6.1", "6.12" or a path
    guest_memory: int = 1 << 30  # the guest's memory: its page-cache knob
    guest_memory_full: int | None = None  # the study's guest_memory when --quick scaled it down
    allow_exec: bool = False  # workload options that run programs are allowed (--allow-exec)
    machine_class: str | None = None  # Dask placement: only workers of this class run the job
    # The guest backend copied an image aged once onto the job's disk: its facts
    # (aged_images.AgedCopy.to_dict), so the job mounts it as it is, without mkfs or aging.
    preaged: dict[str, Any] | None = None


@dataclass(frozen=True)
class Job:
    """Runs executed on one file-system instance, in this order, by one backend. Plain
    data: ``to_json``/``from_json`` round-trip it, so it can run in another process or
    on another machine (``fslab job run JOB.json --out DIR``)."""

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
            "settings": {**asdict(self.settings), "simulate": list(self.settings.simulate)},
            "grant": {"allowed": sorted(self.grant.allowed), "identity": self.grant.identity},
            "runs": [{"cell": r.cell.to_json(), "repetition": r.repetition, "sequence": r.sequence}
                     for r in self.runs],
            "resumed_without": list(self.resumed_without),
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> Job:
        """The inverse of ``to_json``. Raises ValueError on another format or a job with
        no runs (a file that is not a job)."""
        if not isinstance(data, dict) or data.get("format") != JOB_FORMAT:
            found = data.get("format") if isinstance(data, dict) else type(data).__name__
            raise ValueError(f"not an fslab job (format {found!r}, expected {JOB_FORMAT!r})")
        if not data.get("runs"):
            raise ValueError("the job has no runs")
        settings = dict(data["settings"])
        settings["simulate"] = tuple(settings.get("simulate", ()))
        return Job(
            id=str(data["id"]), backend=str(data["backend"]),
            runs=tuple(Run(Cell.from_json(r["cell"]), int(r["repetition"]), int(r["sequence"]))
                       for r in data["runs"]),
            settings=JobSettings(**settings),
            grant=Grant(frozenset(data["grant"]["allowed"]), data["grant"]["identity"]),
            resumed_without=tuple(data.get("resumed_without", ())),
        )

    def with_runs(self, runs: tuple[Run, ...], resumed_without: tuple[str, ...]) -> Job:
        return replace(self, runs=runs, resumed_without=resumed_without)


@dataclass(frozen=True)
class Skip:
    filesystem: str
    reason: str


@dataclass(frozen=True)
class Plan:
    cells: tuple[Cell, ...]
    jobs: tuple[Job, ...]
    skipped: tuple[Skip, ...]
    repetitions: int
    order: str
    seed: int
    fresh: str
    quick: bool

    @property
    def runs(self) -> list[Run]:
        return [run for job in self.jobs for run in job.runs]


def expand_axes(section: WorkloadSection) -> list[dict[str, Any]]:
    """Axis combinations: zipped groups vary together, everything else is crossed.
    Axes keep the order the study file gives them."""
    zipped_axes = {axis for group in section.zip for axis in group}
    dimensions: list[list[dict[str, Any]]] = []
    emitted: set[str] = set()
    for axis in section.axes:
        if axis in emitted:
            continue
        group = next((g for g in section.zip if axis in g), None)
        if group is not None and axis in zipped_axes:
            length = len(section.axes[group[0]])
            dimensions.append([{a: section.axes[a][i] for a in group} for i in range(length)])
            emitted.update(group)
        else:
            dimensions.append([{axis: v} for v in section.axes[axis]])
            emitted.add(axis)
    combos = []
    for parts in itertools.product(*dimensions):
        combo: dict[str, Any] = {}
        for part in parts:
            combo.update(part)
        combos.append(combo)
    return combos


def _cell_id(payload: dict[str, Any]) -> str:
    canonical = json.dumps(payload, sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def build_cells(spec: StudySpec, *, quick: bool, source: str = "study") -> tuple[list[Cell], list[Skip]]:
    cells: list[Cell] = []
    skipped: list[Skip] = []
    for fs_name, fs_section in spec.filesystems.items():
        fs_type = fs_section.type or fs_name
        device = spec.device_of(fs_name)
        backend, reason = choose_backend(FILESYSTEMS.get(fs_type), DEVICES.get(device.kind),
                                         fs_section.requested_backend(spec.study.backend))
        if backend is None:
            skipped.append(Skip(fs_name, reason or "skipped"))
            continue
        for index, workload in enumerate(spec.workloads):
            plugin = WORKLOADS.get(workload.kind)
            for axes in expand_axes(workload):
                try:
                    params = plugin.validate({**workload.params, **axes})
                except ParamError as exc:
                    combo = ", ".join(f"{k} = {v!r}" for k, v in axes.items())
                    raise SpecError(f"{exc} (in the combination {combo})", source=source,
                                    field=f"workloads[{index}].{exc.key}") from None
                memory = workload.memory
                guest_memory = spec.study.guest_memory if backend == "guest" else None
                if quick:  # keep the data-to-memory ratio: it decides what the device sees
                    scaled = plugin.quick(params)
                    full_data, quick_data = data_bytes(plugin, params), data_bytes(plugin, scaled)
                    memory = quick_memory(memory, full_data, quick_data)
                    if guest_memory is not None:  # the guest's memory is its page cache
                        guest_memory = max(quick_memory(guest_memory, full_data, quick_data) or 0,
                                           min(GUEST_MIN_MEMORY, guest_memory))
                    params = scaled
                primary = plugin.primary_metrics(params)[0]
                payload = {
                    "filesystem": fs_name, "fs_type": fs_type, "mkfs": fs_section.mkfs,
                    "mount": fs_section.mount, "workload": workload.name, "kind": workload.kind,
                    "params": params, "backend": backend,
                    # Where a job is placed is provenance, not part of the cell.
                    "device": device.model_dump(exclude={"machine_class"}),
                    "memory": memory,
                }
                aging = workload.aging_in_effect(spec.study.aging)
                if aging is not None:  # only then: un-aged cells keep the ids they had
                    payload["aging"] = aging.model_dump()
                if fs_section.kernel is not None:  # likewise: cells on the study's kernel keep theirs
                    payload["kernel"] = fs_section.kernel
                kernel = (fs_section.kernel or spec.study.guest_kernel) if backend == "guest" else None
                cells.append(Cell(
                    id=_cell_id(payload), filesystem=fs_name, fs_type=fs_type,
                    mkfs=tuple(fs_section.mkfs), mount=tuple(fs_section.mount),
                    workload=workload.name, workload_kind=workload.kind, params=params,
                    axes=dict(axes), backend=backend, memory_bytes=memory,
                    timeout_s=workload.timeout, primary_metric=primary,
                    aging=aging.model_dump() if aging is not None else None, kernel=kernel,
                    guest_memory=guest_memory,
                ))
    return cells, skipped


QUICK_REPETITIONS = 2


def _device_data(section: DeviceSection) -> dict[str, Any]:
    """A device section as a job carries it: its kind and its plug-in's parsed fields."""
    return {"kind": section.kind, **DEVICES.get(section.kind).parse(section).model_dump()}


def _job_settings(settings: JobSettings, cells: list[Cell]) -> JobSettings:
    """A guest job's own kernel and memory. Its cells share one file-system entry, so one
    kernel; with ``fresh = "repetition"`` their quick-scaled memories may differ, and the
    largest is taken (the guest must hold every one of them)."""
    first = cells[0]
    if first.backend != "guest" or first.kernel is None:
        return settings
    memories = [c.guest_memory for c in cells if c.guest_memory is not None]
    memory = max(memories) if memories else settings.guest_memory
    return replace(settings, guest_kernel=first.kernel, guest_memory=memory,
                   guest_memory_full=settings.guest_memory if memory != settings.guest_memory else None)


QUICK_AGED_IMAGE_BYTES = 256 << 20  # --quick: image size cap for studies that age


def make_plan(spec: StudySpec, *, quick: bool = False, seed: int | None = None,
              source: str = "study", study_dir: str = ".", allow_exec: bool = False) -> Plan:
    """Expand and order a study. The seed (given, from the file, or drawn) is in the plan
    so the same order can be reproduced and a resumed study keeps it."""
    cells, skipped = build_cells(spec, quick=quick, source=source)
    repetitions = QUICK_REPETITIONS if quick else spec.study.repetitions
    if seed is None:
        seed = spec.study.seed if spec.study.seed is not None else random.SystemRandom().randrange(2**31)
    rng = random.Random(seed)
    shuffle = spec.study.order == "shuffled"
    device = _device_data(spec.device)
    own_devices = {name: _device_data(fs.device) for name, fs in spec.filesystems.items() if fs.device is not None}
    if quick and any(c.aging for c in cells):
        # Aging writes most of the device (ntfs-3g in a TCG guest: ~0.4 MB/s): a smaller
        # image keeps the fill fraction, which decides the layout, at a fraction of the time.
        for data in (device, *own_devices.values()):
            if data["kind"] == "image":
                data["size"] = min(data["size"], QUICK_AGED_IMAGE_BYTES)
    settings = JobSettings(
        device=device, drop_caches=spec.study.drop_caches,
        fresh=spec.study.fresh, order_seed=seed, trace=spec.study.trace,
        simulate=tuple(spec.study.simulate), study_dir=study_dir, allow_exec=allow_exec,
        guest_kernel=spec.study.guest_kernel, guest_memory=spec.study.guest_memory,
        machine_class=spec.device.machine_class or spec.study.machine_class,
    )
    groups: list[list[tuple[Cell, int]]] = []
    for repetition in range(repetitions):
        if spec.study.fresh == "run":
            order = list(cells)
            if shuffle:
                rng.shuffle(order)
            groups.extend([(c, repetition)] for c in order)
        else:
            # Cells share a file system only if they also share its aging.
            by_fs: dict[str, list[Cell]] = {}
            for cell in cells:
                by_fs.setdefault(cell.filesystem + json.dumps(cell.aging, sort_keys=True), []).append(cell)
            passes = list(by_fs.values())
            if shuffle:
                rng.shuffle(passes)
                for group in passes:
                    rng.shuffle(group)
            groups.extend([(c, repetition) for c in group] for group in passes)
    jobs: list[Job] = []
    sequence = 0
    for index, group in enumerate(groups):
        runs = []
        for cell, repetition in group:
            runs.append(Run(cell, repetition, sequence))
            sequence += 1
        job_settings = _job_settings(settings, [cell for cell, _ in group])
        own = spec.filesystems[group[0][0].filesystem].device
        if own is not None:  # an entry's own device, and the workers that have it
            job_settings = replace(job_settings, device=own_devices[group[0][0].filesystem],
                                   machine_class=own.machine_class or spec.study.machine_class)
        jobs.append(Job(f"job{index:05d}", group[0][0].backend, tuple(runs), job_settings))
    return Plan(tuple(cells), tuple(jobs), tuple(skipped), repetitions, spec.study.order, seed,
                spec.study.fresh, quick)
