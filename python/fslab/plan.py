"""Expanding a study into cells and runs, ordering the runs, and grouping them into jobs.

A cell is one file system x one workload x one combination of axis values. A run is one
repetition of one cell. Runs are grouped into jobs (fslab.job: plain data that travels
as JSON to wherever it runs). With ``fresh = "run"`` every job is one run on a freshly
made file system; with ``fresh = "repetition"`` a job is one pass of a file system's
cells on one file system.

The files a workload reads (a fio job file and its includes) are read here, once, and
travel inside the cells: a job needs nothing beside it, and an edited job file is
another cell. Which backend runs a file system is asked of the chooser the caller hands
in (``fslab.backends.choose_backend``): planning knows no backend.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from .datarecords import replace
from .devices import DEVICES, DeviceKind, capacity_of
from .errors import SpecError
from .filesystems import FILESYSTEMS, FilesystemType
from .jobdata.model import Cell, Job, JobSettings, Run
from .spec import BACKEND_PREFERENCE, GUEST_MIN_MEMORY, DeviceSection, StudyBackend, StudySpec, WorkloadSection
from .stopping import cell_infos, make_pairs
from .stopping_rule import StoppingRule
from .units import given_text, value_text
from .workloads import WORKLOADS, ParamError, data_bytes, quick_memory

# (file system, device kind, its parsed [device] section, the backend asked for: host |
# guest | auto) -> (the backend that runs it, why there or None) or (None, why the file
# system is skipped).
BackendChooser = Callable[[FilesystemType, DeviceKind, Any, str], tuple["str | None", "str | None"]]

@dataclass(frozen=True)
class Skip:
    filesystem: str
    reason: str


@dataclass(frozen=True)
class Placement:
    """Why a file system runs on its backend, where that needs saying (a guest because
    the host kernel lacks something; the host because its kernel has it after all)."""

    filesystem: str
    backend: str
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
    # Input files a workload could not read or refuses ("workloads[0].job_file: ..."): the
    # plan is made without them so every problem can be listed at once (preflight does).
    problems: tuple[str, ...] = ()
    # repetitions = "auto": the stopping rule; ``repetitions`` (and the jobs) are then its
    # maximum, and the runner runs them pass by pass while cells still need runs.
    auto: StoppingRule | None = None
    placed: tuple[Placement, ...] = ()

    @property
    def runs(self) -> list[Run]:
        return [run for job in self.jobs for run in job.runs]

    def uncompared(self) -> str | None:
        """Which file systems the report will not rank against each other, because they run
        on different backends (the host kernel, a guest and its kernel): None when all share one."""
        groups: dict[str, list[str]] = {}
        for cell in self.cells:
            where = "host" if cell.backend == "host" else f"guest {cell.kernel}"
            if cell.filesystem not in groups.setdefault(where, []):
                groups[where].append(cell.filesystem)
        if len(groups) < 2:
            return None
        sides = "; ".join(f"{', '.join(names)} ({where})" for where, names in groups.items())
        return (f"file systems on different backends are not compared with each other: {sides}. To compare "
                "them, run them on one backend (backend = \"guest\" in [study] or in each entry)")


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


class _Made(NamedTuple):
    """A cell as its id was made: its axes, its place in the list, its id's payload and what
    --quick scaled in it."""

    axes: dict[str, Any]
    position: int
    payload: dict[str, Any]
    quick_scaled: dict[str, Any]


def _combination_text(axes: dict[str, Any]) -> str:
    """'rw = "read", direct = true': one combination of axis values, as the study file writes them."""
    return ", ".join(f"{k} = {given_text(v) if isinstance(v, bool) else json.dumps(v, default=str)}"
                     for k, v in axes.items())


def build_cells(spec: StudySpec, *, quick: bool, backends: BackendChooser, source: str = "study",
                study_dir: Path = Path("."), allow_exec: bool = False,
                problems: list[str] | None = None,
                placed: list[Placement] | None = None) -> tuple[list[Cell], list[Skip]]:
    """Every cell of the study, and the file systems no backend can run (with why).
    Raises SpecError naming the field of a parameter a workload rejects. An input file it
    cannot read or refuses is appended to ``problems`` (its field and why) when a list is
    given, else raised likewise; why a file system runs where it does, to ``placed``."""
    cells: list[Cell] = []
    made: dict[str, _Made] = {}  # cell id -> what made it
    split: set[str] = set()  # ids --quick gave to several cells, each of which now holds its own
    skipped: list[Skip] = []
    smallest = _smallest_device(spec)
    study_backend, shared_reason = shared_backend(spec, backends)
    combinations: dict[str, list[dict[str, Any]]] = {}
    for workload in spec.workloads:
        combinations.setdefault(workload.kind, []).extend(
            {**workload.params, **axes} for axes in expand_axes(workload))
    for workload_kind, param_sets in combinations.items():
        WORKLOADS.get(workload_kind).prevalidate(param_sets)
    for fs_name, fs_section in spec.filesystems.items():
        fs_type = fs_section.type or fs_name
        device = spec.device_of(fs_name)
        kind = DEVICES.get(device.kind)
        backend, reason = backends(FILESYSTEMS.get(fs_type), kind, kind.parse(device),
                                   fs_section.requested_backend(study_backend))
        if shared_reason is not None and fs_section.backend is None and fs_section.kernel is None:
            reason = shared_reason
        if backend is None:
            skipped.append(Skip(fs_name, reason or "skipped"))
            continue
        if reason is not None and placed is not None:
            placed.append(Placement(fs_name, backend, reason))
        for index, workload in enumerate(spec.workloads):
            plugin = WORKLOADS.get(workload.kind)
            for axes in expand_axes(workload):
                try:
                    params = plugin.validate({**workload.params, **axes})
                    params = plugin.fixed_for_study(params, device_bytes=smallest, memory=workload.memory)
                except ParamError as exc:
                    combo = _combination_text(axes)
                    raise SpecError(f"{exc} (in the combination {combo})" if combo else str(exc), source=source,
                                    field=f"workloads[{index}].{exc.key}") from None
                try:
                    inputs = plugin.inputs(params, study_dir, allow_exec)
                except ParamError as exc:
                    if problems is None:
                        raise SpecError(str(exc), source=source, field=f"workloads[{index}].{exc.key}") from None
                    problems.append(f"workloads[{index}].{exc.key}: {exc}")
                    inputs = {}
                memory = workload.memory
                guest_memory = spec.study.guest_memory if backend == "guest" else None
                quick_scaled: dict[str, Any] = {}
                if quick:  # keep the data-to-memory ratio: it decides what the device sees
                    scaled = plugin.quick(params)
                    quick_scaled = {k: params.get(k) for k in sorted(scaled.keys() | params.keys())
                                    if scaled.get(k) != params.get(k)}
                    full_data, quick_data = data_bytes(plugin, params), data_bytes(plugin, scaled)
                    memory = quick_memory(memory, full_data, quick_data)
                    if guest_memory is not None:  # the guest's memory is its page cache
                        floor = guest_memory_floor(memory, spec.study.trace, _device_data(device))
                        guest_memory = max(quick_memory(guest_memory, full_data, quick_data) or 0,
                                           min(floor, guest_memory))
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
                if inputs:  # the texts, not their names: an edited job file is another cell
                    payload["inputs"] = inputs
                kernel = (fs_section.kernel or spec.study.guest_kernel) if backend == "guest" else None
                cell_id = _cell_id(payload)
                earlier = made.get(cell_id)
                if quick_scaled and (cell_id in split or (earlier is not None and earlier.quick_scaled
                                                          and earlier.quick_scaled != quick_scaled)):
                    # --quick scaled cells alike (runtime = [5, 10], both at 1 s): those cells' ids also
                    # hold what it scaled (only theirs: every other cell keeps the id it had)
                    if earlier is not None:
                        del made[cell_id]
                        split.add(cell_id)
                        renamed = _cell_id({**earlier.payload, "quick_from": earlier.quick_scaled})
                        cells[earlier.position] = replace(cells[earlier.position], id=renamed)
                        made[renamed] = earlier
                    cell_id = _cell_id({**payload, "quick_from": quick_scaled})
                if (alike := made.setdefault(cell_id, _Made(axes, len(cells), payload, quick_scaled)).axes) \
                        is not axes:
                    # axis values the workload reads alike (fio's direct = [1, true]): one run twice
                    apart = [k for k in axes if repr(alike.get(k)) != repr(axes[k])] or list(axes)
                    first, second = ({k: combo[k] for k in apart} for combo in (alike, axes))
                    raise SpecError(f"{_combination_text(first)} and {_combination_text(second)} are the same run to "
                                    f"the {workload.kind} workload (it reads both values alike); give each value "
                                    "once", source=source, field=f"workloads[{index}].axes")
                cells.append(Cell(
                    id=cell_id, filesystem=fs_name, fs_type=fs_type,
                    mkfs=tuple(fs_section.mkfs), mount=tuple(fs_section.mount),
                    workload=workload.name, workload_kind=workload.kind, params=params,
                    axes=dict(axes), backend=backend, memory_bytes=memory,
                    timeout_s=workload.timeout, primary_metric=primary,
                    aging=aging.model_dump() if aging is not None else None, kernel=kernel,
                    guest_memory=guest_memory, inputs=inputs, quick_scaled=quick_scaled,
                ))
    return cells, skipped


def shared_backend(spec: StudySpec, backends: BackendChooser) -> tuple[StudyBackend, str | None]:
    """The study's backend request for its entries, and why when ``backend = "shared"``
    chose it: the first backend (host, then guest) that runs every entry that names no
    backend or kernel of its own; ``auto`` (each its own) when none runs them all."""
    if spec.study.backend != "shared":
        return spec.study.backend, None
    entries = [(name, fs) for name, fs in spec.filesystems.items() if fs.backend is None and fs.kernel is None]
    refusals: list[str] = []
    for name in BACKEND_PREFERENCE:
        cannot = []
        for fs_name, fs in entries:
            device = spec.device_of(fs_name)
            kind = DEVICES.get(device.kind)
            chosen, why = backends(FILESYSTEMS.get(fs.type or fs_name), kind, kind.parse(device), name)
            if chosen != name:
                # the chooser's words for one backend: "host: REASON: skipped"
                reason = (why or "").removeprefix(f"{name}: ").removesuffix(": skipped")
                cannot.append(f"{fs_name} ({reason})" if reason else fs_name)
        if not cannot:
            before = f"; {'; '.join(refusals)}" if refusals else ""
            return name, f"backend = \"shared\" puts every entry on one backend{before}"
        refusals.append(f"the {name} cannot run {', '.join(cannot)}")
    return "auto", None


def _smallest_device(spec: StudySpec) -> int | None:
    """Bytes of the study's smallest device; None when any device's size is unknown."""
    sizes = [capacity_of(device) for device in spec.devices_in_use()]
    known = [size for size in sizes if size is not None]
    return min(known) if known and len(known) == len(sizes) else None


QUICK_REPETITIONS = 2

# What a guest holds besides the workload's page cache, for sizing a --quick guest (its
# memory scales with the data, but not below this): the kernel and init, and fslab's own
# Python with its trace reader and device models (peak RSS of `fslab job run` of a traced
# 128 MiB MobiBench run with a prediction, measured on the host: 220 MB).
GUEST_BASE_MEMORY = 384 << 20
GUEST_CPUS = 2  # the most vCPUs a guest gets (backends.guest.launcher.KVM_CPUS): a trace ring buffer each
MD_STRIPE_CACHE_ENTRIES = 256  # md's default stripe_cache_size: one page per member each


def guest_memory_floor(memory_limit: int | None, trace: bool, device: dict[str, Any]) -> int:
    """The least memory a guest running this cell needs: the base, the workload's memory
    cgroup, the trace's ring buffers and an md RAID5 array's stripe cache (bytes). Below
    it the guest's OOM killer takes fslab itself (a quick seed-004 on RAID5 at 256 MiB)."""
    from .trace.capture import DEFAULT_BUFFER_KB

    floor = GUEST_BASE_MEMORY + (memory_limit or 0)
    if trace:
        floor += GUEST_CPUS * DEFAULT_BUFFER_KB * 1024
    if device.get("kind") == "raid" and device.get("level") == 5:
        floor += MD_STRIPE_CACHE_ENTRIES * 4096 * int(device.get("disks", 0))
    return max(floor, GUEST_MIN_MEMORY)


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


def make_plan(spec: StudySpec, *, backends: BackendChooser, quick: bool = False, seed: int | None = None,
              source: str = "study", study_dir: Path = Path("."), allow_exec: bool = False) -> Plan:
    """Expand and order a study. The seed (given, from the file, or drawn) is in the plan
    so the same order can be reproduced and a resumed study keeps it. ``backends`` picks
    the backend of each file system (fslab.backends.choose_backend); ``study_dir`` is
    where relative input files (a fio job_file) are read from, now, once; what cannot be
    read is in ``Plan.problems`` (preflight.check_plan raises it with the rest)."""
    problems: list[str] = []
    placed: list[Placement] = []
    cells, skipped = build_cells(spec, quick=quick, backends=backends, source=source,
                                 study_dir=study_dir, allow_exec=allow_exec, problems=problems, placed=placed)
    auto = spec.study.stopping_rule()
    if auto is not None:
        if quick:  # a smoke run of the passes, not of the statistics
            auto = replace(auto, min_n=QUICK_REPETITIONS, max_n=QUICK_REPETITIONS + 1)
        _check_contrasts(auto, cells, source)
    repetitions = auto.max_n if auto is not None else (
        QUICK_REPETITIONS if quick else int(spec.study.repetitions))
    if seed is None:
        seed = spec.study.seed if spec.study.seed is not None else random.SystemRandom().randrange(2**31)
    rng = random.Random(seed)
    shuffle = spec.study.order == "shuffled"
    device = _device_data(spec.device)
    own_devices = {name: _device_data(fs.device) for name, fs in spec.filesystems.items() if fs.device is not None}
    if quick and any(c.aging for c in cells):
        # Aging writes most of the device (ntfs-3g in a TCG guest: ~0.4 MB/s): a smaller
        # image keeps the fill fraction, which decides the layout, at a fraction of the time.
        # Emulated devices too, but null_blk, whose sizes are whole GiB.
        for data in (device, *own_devices.values()):
            if data["kind"] == "image" or (data["kind"] == "emulated" and data.get("model") != "null_blk"):
                data["size"] = min(data["size"], QUICK_AGED_IMAGE_BYTES)
    settings = JobSettings(
        device=device, drop_caches=spec.study.drop_caches,
        fresh=spec.study.fresh, reuse_layout=spec.study.reuse_layout, order_seed=seed, trace=spec.study.trace,
        simulate=tuple(spec.study.simulate), allow_exec=allow_exec,
        models={name: {"base": m.base, **m.overrides} for name, m in spec.models.items()},
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
                for same_fs in passes:
                    rng.shuffle(same_fs)
            groups.extend([(c, repetition) for c in same_fs] for same_fs in passes)
    jobs: list[Job] = []
    sequence = 0
    for index, group in enumerate(groups):
        runs = []
        for cell, repetition in group:
            runs.append(Run(cell, repetition, sequence))
            sequence += 1
        job_settings = _job_settings(settings, [cell for cell, _ in group])
        entry = spec.filesystems[group[0][0].filesystem]
        own = entry.device
        if own is not None:  # an entry's own device, and the workers that have it
            job_settings = replace(job_settings, device=own_devices[group[0][0].filesystem],
                                   machine_class=own.machine_class or spec.study.machine_class)
        if entry.simulate is not None:  # the models of this entry's device
            job_settings = replace(job_settings, simulate=tuple(entry.simulate))
        jobs.append(Job(f"job{index:05d}", group[0][0].backend, tuple(runs), job_settings))
    return Plan(tuple(cells), tuple(jobs), tuple(skipped), repetitions, spec.study.order, seed,
                spec.study.fresh, quick, tuple(dict.fromkeys(problems)), auto, tuple(placed))


def _check_contrasts(rule: StoppingRule, cells: list[Cell], source: str) -> None:
    """Each ``[study] contrast`` must pair some cells, or it is a typo."""
    for index, contrast in enumerate(rule.contrasts):
        alone = replace(rule, contrasts=(contrast,))
        if not any(p.kind == "contrast" for p in make_pairs(cell_infos(cells), alone)):
            axis = contrast.partition("=")[0]
            values = sorted({value_text(c.axes[axis]) for c in cells if axis in c.axes})
            takes = f"{axis} takes {', '.join(values)}" if values else f"{axis} is not an axis of any workload"
            raise SpecError(f"{contrast!r} pairs no cells: no two cells of one file system and case differ only "
                            f"in {axis} between those two values ({takes})", source=source,
                            field=f"study.contrast[{index}]")
