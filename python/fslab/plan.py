"""Expanding a study into cells and runs, and ordering the runs.

A cell is one file system x one workload x one combination of axis values. A run is one
repetition of one cell. Runs are grouped into jobs: the unit an executor receives. With
``fresh = "run"`` every job is one run on a freshly made file system; with
``fresh = "repetition"`` a job is one pass of a file system's cells on one file system.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
from dataclasses import asdict, dataclass
from typing import Any

from .errors import SpecError
from .filesystems import FILESYSTEMS
from .spec import StudySpec, WorkloadSection
from .workloads import WORKLOADS, ParamError


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

    @property
    def label(self) -> str:
        axes = " ".join(f"{k}={v}" for k, v in self.axes.items())
        return f"{self.workload}" + (f" [{axes}]" if axes else "")

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["mkfs"] = list(self.mkfs)
        data["mount"] = list(self.mount)
        return data


@dataclass(frozen=True)
class Run:
    cell: Cell
    repetition: int

    @property
    def key(self) -> str:
        return f"{self.cell.id}-r{self.repetition}"


@dataclass(frozen=True)
class Job:
    """Runs executed on one file system instance, in this order."""

    runs: tuple[Run, ...]
    # Runs of the same pass already stored before an interruption: on resume the rest of
    # the pass runs on a new file system without them, which provenance must say.
    resumed_without: tuple[str, ...] = ()

    @property
    def cell(self) -> Cell:
        return self.runs[0].cell


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


def backend_for(fs_type: str, requested: str) -> tuple[str | None, str | None]:
    """(backend, skip reason). Only the host backend exists so far."""
    entry = FILESYSTEMS.get(fs_type)
    if entry.needs_guest:
        return None, (
            f"{fs_type} needs the guest backend (QEMU), which this version of fslab does not "
            f"have yet: skipped"
        )
    if requested == "guest":
        return None, "the guest backend is not available yet: skipped"
    return "host", None


def build_cells(spec: StudySpec, *, quick: bool, source: str = "study") -> tuple[list[Cell], list[Skip]]:
    cells: list[Cell] = []
    skipped: list[Skip] = []
    for fs_name, fs_section in spec.filesystems.items():
        fs_type = fs_section.type or fs_name
        backend, reason = backend_for(fs_type, spec.study.backend)
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
                if quick:
                    params = plugin.quick(params)
                payload = {
                    "filesystem": fs_name, "fs_type": fs_type, "mkfs": fs_section.mkfs,
                    "mount": fs_section.mount, "workload": workload.name, "kind": workload.kind,
                    "params": params, "device": spec.device.model_dump(), "backend": backend,
                    "memory": workload.memory,
                }
                cells.append(Cell(
                    id=_cell_id(payload), filesystem=fs_name, fs_type=fs_type,
                    mkfs=tuple(fs_section.mkfs), mount=tuple(fs_section.mount),
                    workload=workload.name, workload_kind=workload.kind, params=params,
                    axes=dict(axes), backend=backend, memory_bytes=workload.memory,
                    timeout_s=workload.timeout,
                ))
    return cells, skipped


QUICK_REPETITIONS = 2


def make_plan(spec: StudySpec, *, quick: bool = False, seed: int | None = None,
              source: str = "study") -> Plan:
    """Expand and order a study. The seed (given, from the file, or drawn) is in the plan
    so the same order can be reproduced and a resumed study keeps it."""
    cells, skipped = build_cells(spec, quick=quick, source=source)
    repetitions = QUICK_REPETITIONS if quick else spec.study.repetitions
    if seed is None:
        seed = spec.study.seed if spec.study.seed is not None else random.SystemRandom().randrange(2**31)
    rng = random.Random(seed)
    shuffle = spec.study.order == "shuffled"
    jobs: list[Job] = []
    for repetition in range(repetitions):
        if spec.study.fresh == "run":
            order = list(cells)
            if shuffle:
                rng.shuffle(order)
            jobs.extend(Job((Run(c, repetition),)) for c in order)
        else:
            by_fs: dict[str, list[Cell]] = {}
            for cell in cells:
                by_fs.setdefault(cell.filesystem, []).append(cell)
            groups = list(by_fs.values())
            if shuffle:
                rng.shuffle(groups)
                for group in groups:
                    rng.shuffle(group)
            jobs.extend(Job(tuple(Run(c, repetition) for c in group)) for group in groups)
    return Plan(tuple(cells), tuple(jobs), tuple(skipped), repetitions, spec.study.order, seed,
                spec.study.fresh, quick)
