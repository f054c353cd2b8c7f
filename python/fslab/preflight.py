"""Preflight: everything a study needs, checked from its plan before the first mkfs, with
every missing piece listed at once. It reads the plan's jobs and cells (each job carries
its device, each cell its workload, parameters and input files), never the study file.

- ``check_plan(plan, host=False)``: what needs no root — tools, kernel features a study's
  options need (cgroup memory controller), traceability, workload inputs (a job file fio
  rejects), data larger than its device. `fslab plan` runs it, so a plan accepts exactly
  what a run would not refuse for these reasons;
- ``check_plan(plan, host=True)``: also root, drop_caches, loop devices and tracefs, for
  `fslab run`;
- ``probe_filesystems`` (``check_plan(probe_dir=...)``): makes and mounts each host file-system entry once on a scratch
  image (needs root): a rejected mkfs or mount option is found once, not in every run;
- ``device_identity``: the checks and identities of every handed-over disk.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TypeGuard

from .cgroups import detect_version
from .commands import require_tool
from .devices import DEVICES, DeviceKind
from .errors import CommandFailed, MissingCapability, SpecError
from .filesystems import FILESYSTEMS, FilesystemType
from .jobdata.model import Cell, Grant
from .pagecache import DROP_CACHES
from .plan import Plan
from .units import format_bytes
from .workloads import WORKLOADS


def devices_in_use(plan: Plan) -> list[tuple[dict[str, Any], list[Cell]]]:
    """The distinct devices the plan's jobs run on (as the jobs carry them: kind and parsed
    fields), each with the cells that run on it, in plan order."""
    seen: dict[str, tuple[dict[str, Any], list[Cell]]] = {}
    for job in plan.jobs:
        key = repr(sorted(job.settings.device.items(), key=str))
        device, cells = seen.setdefault(key, (job.settings.device, []))
        for run in job.runs:
            if run.cell not in cells:
                cells.append(run.cell)
    return list(seen.values())


def check_plan(plan: Plan, *, source: str = "study", host: bool = False, probe_dir: Path | None = None,
               disks: bool = False) -> None:
    """Raise MissingCapability listing every missing tool or feature (with ``host``, also
    root, drop_caches, loop devices and tracefs), then SpecError listing every workload
    input or size that would fail each run, with ``disks`` every refusal of a disk of the
    user's (disk_problems: what `fslab plan` checks without writing; `fslab run` checks
    them in device_identity), and, with ``probe_dir``, every mkfs or mount option the file
    systems reject (probe_filesystems, on scratch images made there)."""
    problems = _capability_problems(plan) + (_host_problems(plan) if host else [])
    if problems:
        raise MissingCapability("this study cannot run here:\n  " + "\n  ".join(dict.fromkeys(problems)),
                                fix="`fslab doctor` lists what is missing and how to install it")
    problems = list(plan.problems) + (disk_problems(plan) if disks else []) + _input_problems(plan)
    if host or disks:  # the devices are this machine's
        problems += _partition_trace_problems(plan)
    if probe_dir is not None:
        problems += probe_filesystems(plan, probe_dir)
    if problems:
        raise SpecError("the study would fail when it runs:\n  " + "\n  ".join(dict.fromkeys(problems)),
                        source=source)


def _settings(plan: Plan) -> tuple[bool, bool]:
    """(trace, drop_caches) as the study's jobs carry them."""
    return (any(j.settings.trace for j in plan.jobs), any(j.settings.drop_caches for j in plan.jobs))


def _capability_problems(plan: Plan) -> list[str]:
    problems: list[str] = []
    trace, _ = _settings(plan)
    tools: set[str] = set()
    needs_cgroup = False
    for device, cells in devices_in_use(plan):
        kind = DEVICES.get(device["kind"])
        tools.update(kind.tools)
        if trace and not kind.traceable:
            problems.append(f"study.trace: device kind {kind.name!r} cannot be traced")
        for cell in cells:
            fstype = FILESYSTEMS.get(cell.fs_type)
            workload = WORKLOADS.get(cell.workload_kind)
            if cell.backend == "host":  # a guest brings its own tools
                tools.update(fstype.tools)
                tools.update(workload.tools)
                tools.update(("mount", "umount", "sync") if fstype.needs_root else ("sync",))
            needs_cgroup |= cell.memory_bytes is not None or workload.capabilities.memory_limited
            if trace and not workload.capabilities.traceable:
                problems.append(f"workload kind {cell.workload_kind!r} cannot be traced (study.trace)")
            if workload.capabilities.needs_block_device and not kind.traceable:
                problems.append(f"workload kind {cell.workload_kind!r} needs a block device; device kind "
                                f"{kind.name!r} has none")
    if needs_cgroup and detect_version() is None:
        problems.append("a workload needs a memory-limited cgroup, but no cgroup memory controller "
                        "is usable (mount the v1 memory controller or enable 'memory' in cgroup v2)")
    for tool in sorted(tools):
        try:
            require_tool(tool)
        except MissingCapability as exc:
            problems.append(str(exc))
    return problems


def _kinds(plan: Plan) -> list[DeviceKind]:
    return [DEVICES.get(device["kind"]) for device, _ in devices_in_use(plan)]


def _host_problems(plan: Plan) -> list[str]:
    problems: list[str] = []
    trace, drop_caches = _settings(plan)
    kinds = _kinds(plan)
    needs_root = drop_caches or any(kind.needs_root for kind in kinds) or any(
        FILESYSTEMS.get(cell.fs_type).needs_root for cell in plan.cells)
    if needs_root and os.geteuid() != 0:
        problems.append("fslab must run as root (it makes loop devices, file systems and mounts)")
    if trace:
        from .trace.capture import tracefs_root

        try:
            if not (tracefs_root() / "events/block/block_rq_issue").exists():
                problems.append("study.trace: this kernel's tracefs has no block_rq_issue event")
        except MissingCapability as exc:
            problems.append(f"study.trace: {exc}")
    if drop_caches and not os.access(DROP_CACHES, os.W_OK):
        problems.append(f"{DROP_CACHES} is not writable (run as root, or set study.drop_caches = false)")
    if any("losetup" in kind.tools for kind in kinds) and not Path("/dev/loop-control").exists():
        problems.append("no loop device support (/dev/loop-control): modprobe loop")
    return problems


def disk_problems(plan: Plan) -> list[str]:
    """Every refusal `fslab run` would make of a disk the study names (kind = "block", a
    RAID's members) that needs no write: missing, not a block device, the root disk,
    mounted, in use, a signature without ``force``. The --destroy-data-on confirmation is
    run's alone. A check this user may not make (not root) is left to run."""
    from .devices.block import check_device
    from .errors import DeviceRefused

    problems: list[str] = []
    for device, _ in devices_in_use(plan):
        kind = DEVICES.get(device["kind"])
        if kind.user_disks is None:
            continue
        section = kind.parse(device)
        for path in kind.user_disks(section):
            try:
                check_device(os.path.realpath(path), allow_signature=bool(getattr(section, "force", False)))
            except DeviceRefused as exc:
                problems.append(f"device ({path}): {exc}")
            except PermissionError:
                continue
    return problems


def _partition_trace_problems(plan: Plan) -> list[str]:
    """A traced study cannot trace a partition of the user's on the host (in a guest the
    partition is handed over as a whole disk of its own, and traced there)."""
    from .devices import handle_for, untraceable_partition

    trace, _ = _settings(plan)
    if not trace:
        return []
    problems: list[str] = []
    for device, cells in devices_in_use(plan):
        kind = DEVICES.get(device["kind"])
        if kind.user_disks is None or not any(c.backend == "host" for c in cells):
            continue
        for path in kind.user_disks(kind.parse(device)):
            try:
                why = untraceable_partition(handle_for(os.path.realpath(path)))
            except (OSError, ValueError):
                continue  # missing, or not a block device: disk_problems' and the device's own refusal
            if why:
                problems.append(f"study.trace: {why}; name the whole disk as the device, or set "
                                "study.trace = false")
    return problems


def _too_small(device_bytes: object, fstype: FilesystemType) -> TypeGuard[int]:
    """A device of known size (bytes) below the smallest its file system's mkfs accepts."""
    return isinstance(device_bytes, int) and device_bytes < fstype.min_device_bytes


def _input_problems(plan: Plan) -> list[str]:
    """What would otherwise fail every run, found once: workload inputs (a job file fio
    rejects) and data larger than the device."""
    problems: list[str] = []
    index_of = {name: i for i, name in enumerate(dict.fromkeys(c.workload for c in plan.cells))}
    seen: set[tuple[str, str]] = set()
    for device, cells in devices_in_use(plan):
        device_bytes = device.get("size")
        for cell in cells:
            workload = WORKLOADS.get(cell.workload_kind)
            where = f"workloads[{index_of[cell.workload]}]"
            if (cell.workload, cell.label) not in seen:
                seen.add((cell.workload, cell.label))
                problems += [f"{where}: {p}" for p in workload.preflight(cell.params, cell.inputs)]
            fstype = FILESYSTEMS.get(cell.fs_type)
            if _too_small(device_bytes, fstype) and ("min", cell.filesystem) not in seen:
                seen.add(("min", cell.filesystem))
                problems.append(f"filesystems.{cell.filesystem}: {fstype.name} refuses a device below "
                                f"{format_bytes(fstype.min_device_bytes)} ({fstype.min_device_why}); the device "
                                f"is {format_bytes(device_bytes)}: raise device.size to at least "
                                f"{format_bytes(fstype.min_device_bytes)}")
            data = workload.data_bytes(cell.params, cell.inputs)
            if (data and isinstance(device_bytes, int) and data > 0.9 * device_bytes
                    and (cell.filesystem, cell.label) not in seen):
                seen.add((cell.filesystem, cell.label))
                problems.append(f"{where} ({cell.label}): lays out {format_bytes(data)} of files, more than 90% "
                                f"of the {format_bytes(device_bytes)} device: raise device.size or lower the size")
    return problems


def probe_filesystems(plan: Plan, work_dir: Path) -> list[str]:
    """Make and mount each host file-system entry once, with the study's options, on a
    sparse scratch image of its device's size: a rejected option or a too small device is
    found now, not in every run. Returns what failed, by field."""
    from .devices.image import provision
    from .devices.sections import ImageSection

    problems: list[str] = []
    probed: set[str] = set()
    for device, cells in devices_in_use(plan):
        kind = DEVICES.get(device["kind"])
        for cell in cells:
            fstype = FILESYSTEMS.get(cell.fs_type)
            if cell.backend != "host" or cell.filesystem in probed:
                continue
            probed.add(cell.filesystem)
            if not fstype.needs_root or not kind.needs_root:
                continue
            if _too_small(device.get("size"), fstype):
                continue  # said once already (_input_problems), not again by its mkfs
            size = max(device.get("size") or 1 << 30, 64 << 20)
            step = "mkfs"
            try:
                scratch = ImageSection(size=size, image_dir=device.get("image_dir"))
                with provision(scratch, work_dir, f"{os.getpid()}-probe{len(probed)}") as dev:
                    fstype.make(dev, list(cell.mkfs))
                    step = "mount"
                    with fstype.mounted(dev, list(cell.mount), work_dir / f"mnt-{os.getpid()}-probe"):
                        pass
            except CommandFailed as exc:
                what = f"a {format_bytes(size)} device" if step == "mkfs" else "the options"
                problems.append(f"filesystems.{cell.filesystem}.{step}: {step} fails on {what}: {exc}")
    return problems


def device_identity(plan: Plan, grant: Grant, resuming: bool) -> dict[str, str] | None:
    """The checks of every handed-over disk the study's devices name (the study's [device]
    and entries' own: mounted, in use, the root disk, a signature, confirmed with
    --destroy-data-on), all before the first mkfs, and their identities keyed by disk
    path, which every job carries; None when the study names no disk of the user's."""
    found: dict[str, str] = {}
    for device, _ in devices_in_use(plan):
        kind = DEVICES.get(device["kind"])
        if kind.preflight is not None:  # None: this section names no disk of the user's (an image array)
            found.update(kind.preflight(kind.parse(device), grant, resuming) or {})
    return found or None
