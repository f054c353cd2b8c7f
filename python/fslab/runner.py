"""The runner: turns a study file into stored results. It plans, checks that everything
needed is present before anything is written, hands each job to its backend in order,
stores each record as it arrives (moving its artifacts into place), and resumes an
interrupted study without repeating a run. It knows no concrete backend or executor."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .cgroups import detect_version
from .commands import require_tool
from .devices import DEVICES, Grant
from .errors import CommandFailed, FslabError, MissingCapability, SpecError
from .executors import open_executor
from .filesystems import FILESYSTEMS
from .jobs import read_records
from .plan import Job, Plan, make_plan
from .provenance import host_facts
from .records import RunRecord
from .signals import install_handlers
from .spec import StudySpec
from .store import Store, ensure_results_dir
from .study import load_spec
from .study_lock import study_lock
from .units import format_bytes
from .workloads import WORKLOADS

WORK_DIR_NAME = ".work"
JOBS_DIR_NAME = ".jobs"  # each job's --out directory while it runs
DROP_CACHES = Path("/proc/sys/vm/drop_caches")


@dataclass(frozen=True)
class StudyOutcome:
    study_id: int
    results_dir: Path
    runs_done: int  # runs executed now
    runs_failed: int  # of those, failed
    runs_skipped_as_stored: int
    plan: Plan
    wall_s: float
    runs_failed_total: int = 0  # failed runs the study holds now (earlier passes included)
    runs_retried: int = 0  # failed runs moved to history by --retry-failed

    @property
    def runs_planned(self) -> int:
        return len(self.plan.runs)


def spec_hash(text: str, quick: bool) -> str:
    return hashlib.sha256((text + f"\n#quick={quick}").encode()).hexdigest()


def preflight(spec: StudySpec, plan: Plan, grant: Grant, resuming: bool = False, *,
              work_dir: Path, study_dir: Path, source: str = "study") -> dict[str, str] | None:
    """Everything a study needs, checked before the first mkfs; lists every missing piece.
    Returns the identity of a handed-over device (None for the others)."""
    problems: list[str] = []
    kinds = [DEVICES.get(d.kind) for d in spec.devices_in_use()]
    tools = {tool for kind in kinds for tool in kind.tools}
    needs_root = any(kind.needs_root for kind in kinds) or spec.study.drop_caches
    needs_cgroup = False
    for cell in plan.cells:
        device_kind = DEVICES.get(spec.device_of(cell.filesystem).kind)
        fstype = FILESYSTEMS.get(cell.fs_type)
        workload = WORKLOADS.get(cell.workload_kind)
        if cell.backend == "host":  # a guest brings its own tools
            tools.update(fstype.tools)
            tools.update(workload.tools)
            tools.update(("mount", "umount", "sync") if fstype.needs_root else ("sync",))
        needs_root |= fstype.needs_root
        needs_cgroup |= cell.memory_bytes is not None or workload.capabilities.memory_limited
        if spec.study.trace and not workload.capabilities.traceable:
            problems.append(f"workload kind {cell.workload_kind!r} cannot be traced (study.trace)")
        if workload.capabilities.needs_block_device and not device_kind.traceable:
            problems.append(f"workload kind {cell.workload_kind!r} needs a block device; device kind "
                            f"{device_kind.name!r} has none")
    for kind in kinds:
        if spec.study.trace and not kind.traceable:
            problems.append(f"study.trace: device kind {kind.name!r} cannot be traced")
    if needs_root and os.geteuid() != 0:
        problems.append("fslab must run as root (it makes loop devices, file systems and mounts)")
    if needs_cgroup and detect_version() is None:
        problems.append("a workload needs a memory-limited cgroup, but no cgroup memory controller "
                        "is usable (mount the v1 memory controller or enable 'memory' in cgroup v2)")
    if spec.study.trace:
        from .trace.capture import tracefs_root

        try:
            if not (tracefs_root() / "events/block/block_rq_issue").exists():
                problems.append("study.trace: this kernel's tracefs has no block_rq_issue event")
        except MissingCapability as exc:
            problems.append(f"study.trace: {exc}")
    for tool in sorted(tools):
        try:
            require_tool(tool)
        except MissingCapability as exc:
            problems.append(str(exc))
    if spec.study.drop_caches and not os.access(DROP_CACHES, os.W_OK):
        problems.append(f"{DROP_CACHES} is not writable (run as root, or set study.drop_caches = false)")
    if "losetup" in tools and not Path("/dev/loop-control").exists():
        problems.append("no loop device support (/dev/loop-control): modprobe loop")
    if problems:
        raise MissingCapability("this study cannot run here:\n  " + "\n  ".join(problems),
                                fix="`fslab doctor` lists what is missing and how to install it")
    _check_study_inputs(spec, plan, work_dir, study_dir, source)
    device_kind = DEVICES.get(spec.device.kind)
    if device_kind.preflight is None or spec.device not in spec.devices_in_use():
        return None
    return device_kind.preflight(device_kind.parse(spec.device), grant, resuming)


def _check_study_inputs(spec: StudySpec, plan: Plan, work_dir: Path, study_dir: Path, source: str) -> None:
    """What would otherwise fail every run, found once before the first mkfs: workload
    inputs (a job file missing or rejected by fio), data larger than the device, and
    mkfs or mount options the file system rejects (tried on a scratch image)."""
    problems: list[str] = []
    index_of = {w.name: i for i, w in enumerate(spec.workloads)}
    seen: set[tuple[str, str]] = set()
    for cell in plan.cells:
        section = spec.device_of(cell.filesystem)
        device_bytes = getattr(DEVICES.get(section.kind).parse(section), "size", None)
        workload = WORKLOADS.get(cell.workload_kind)
        where = f"workloads[{index_of[cell.workload]}]"
        check = getattr(workload, "preflight", None)
        if check is not None and (cell.workload, "inputs") not in seen:
            seen.add((cell.workload, "inputs"))
            problems += [f"{where}: {p}" for p in check(cell.params, study_dir)]
        sizing = getattr(workload, "data_bytes", None)
        data = sizing(cell.params) if sizing is not None else None
        if data and device_bytes and data > 0.9 * device_bytes and (cell.filesystem, cell.label) not in seen:
            seen.add((cell.filesystem, cell.label))
            problems.append(f"{where} ({cell.label}): lays out {format_bytes(data)} of files, more than 90% "
                            f"of the {format_bytes(device_bytes)} device: raise device.size or lower the size")
    problems += _probe_filesystems(spec, plan, work_dir)
    if problems:
        raise SpecError("the study would fail when it runs:\n  " + "\n  ".join(dict.fromkeys(problems)),
                        source=source)


def _probe_filesystems(spec: StudySpec, plan: Plan, work_dir: Path) -> list[str]:
    """Make and mount each file-system entry once, with the study's options, on a sparse
    scratch image of the study's device size: a rejected option or a too small device
    is found now, not in every run."""
    from .devices.image import ImageSection, provision

    problems: list[str] = []
    for name in dict.fromkeys(c.filesystem for c in plan.cells if c.backend == "host"):
        cell = next(c for c in plan.cells if c.filesystem == name)
        fstype = FILESYSTEMS.get(cell.fs_type)
        section = spec.device_of(name)
        device = DEVICES.get(section.kind).parse(section)
        size = max(getattr(device, "size", 0) or 1 << 30, 64 << 20)
        if not fstype.needs_root or not DEVICES.get(section.kind).needs_root:
            continue
        step = "mkfs"
        try:
            scratch = ImageSection(size=size, image_dir=getattr(device, "image_dir", None))
            with provision(scratch, work_dir, f"{os.getpid()}-probe{len(problems)}") as dev:
                fstype.make(dev, list(cell.mkfs))
                step = "mount"
                with fstype.mounted(dev, list(cell.mount), work_dir / f"mnt-{os.getpid()}-probe"):
                    pass
        except CommandFailed as exc:
            what = f"a {format_bytes(size)} device" if step == "mkfs" else "the options"
            problems.append(f"filesystems.{name}.{step}: {step} fails on {what}: {exc}")
    return problems


def run_study(
    study: str,
    *,
    results_dir: Path,
    quick: bool = False,
    resume: bool = False,
    retry_failed: bool = False,
    allowed_devices: frozenset[str] = frozenset(),
    allow_exec: bool = False,
    on_start: Callable[[Plan, int, int], None] | None = None,
    on_record: Callable[[RunRecord, str], None] | None = None,
    executor: str | None = None,
) -> StudyOutcome:
    """Run (or resume) a study. ``retry_failed``: continue the newest study of this file
    and run its failed runs again (their failures stay in the store as history).
    ``on_start(plan, study_id, remaining)`` and ``on_record(record, label)`` let the CLI
    draw progress; the runner prints nothing. ``executor``: ``local`` (default) or
    ``dask://HOST:PORT`` (fslab.executors)."""
    started = time.monotonic()
    jobs_executor = open_executor(executor)  # a malformed URL is refused before anything is made
    install_handlers()  # before preflight too: its scratch images are released on SIGTERM
    spec, source, text = load_spec(study, allow_exec=allow_exec)  # a refused study leaves nothing
    ensure_results_dir(results_dir)
    # Mount points are compared with /proc/mounts, which holds canonical paths.
    results_dir = results_dir.resolve()
    digest = spec_hash(text, quick)
    study_dir = Path(source).parent if Path(source).is_file() else Path.cwd()
    with study_lock(results_dir), Store(results_dir) as store:
        previous = store.resumable(digest) if resume else None
        if retry_failed:
            previous = store.latest(digest)
            if previous is None:
                raise FslabError(f"--retry-failed: no run of {source} (quick={quick}) in {results_dir} "
                                 "to retry; run it without --retry-failed to start it")
        if resume and previous is None and store.latest(digest) is None:
            resume = False  # interrupted before anything was stored (e.g. in preflight): start it
        if resume and previous is None:
            raise FslabError(
                f"--resume: no unfinished run of {source} (quick={quick}) in {results_dir}; "
                "run it without --resume to start it (or --retry-failed to re-run failed runs "
                "of a finished one)"
            )
        plan = make_plan(spec, quick=quick, seed=previous.seed if previous else None, source=source,
                         study_dir=str(study_dir.resolve()), allow_exec=allow_exec)
        identity = previous.facts.get("device_identity") if previous else None
        grant = Grant(allowed_devices, identity)
        identity = preflight(spec, plan, grant, resuming=previous is not None,
                             work_dir=results_dir / WORK_DIR_NAME, study_dir=study_dir, source=source)
        grant = Grant(allowed_devices, identity)
        retried = 0
        if previous is not None:
            study_id = previous.id
            store.set_status(study_id, "running")
            if retry_failed:
                retried = store.retire_failed(study_id)
        else:
            study_id = store.create_study(
                name=spec.study.name, source=source, spec_text=text, spec_hash=digest,
                plan=plan, host=host_facts(), facts={"device_identity": identity, "paper": spec.study.paper},
            )
        jobs_dir = results_dir / JOBS_DIR_NAME / f"study-{study_id}"
        _recover_records(store, study_id, jobs_dir)
        stored = store.stored_runs(study_id)
        todo: list[Job] = []
        for job in plan.jobs:
            remaining = tuple(r for r in job.runs if (r.cell.id, r.repetition) not in stored)
            if remaining:
                done_before = tuple(r.key for r in job.runs if r not in remaining)
                todo.append(dataclasses.replace(job.with_runs(remaining, done_before), grant=grant))
        remaining_runs = sum(len(j.runs) for j in todo)
        if on_start:
            on_start(plan, study_id, remaining_runs)
        counts = {"done": 0, "failed": 0}
        labels = {c.id: c for c in plan.cells}
        def emit(record: RunRecord, out_dir: Path) -> None:
            store.add_record(study_id, record, source_dir=out_dir)
            counts["done"] += 1
            counts["failed"] += record.status != "ok"
            if on_record:
                cell = labels[record.cell_id]
                on_record(record, f"{cell.filesystem} {cell.label} #{record.repetition + 1}")

        try:
            jobs_executor.run(todo, jobs_dir, results_dir / WORK_DIR_NAME, emit)
        except BaseException:
            store.set_status(study_id, "interrupted")
            raise
        store.set_status(study_id, "complete")
        shutil.rmtree(jobs_dir, ignore_errors=True)
        failed_total = store.failed_count(study_id)
    return StudyOutcome(study_id, results_dir, counts["done"], counts["failed"],
                        len(stored), plan, time.monotonic() - started, failed_total, retried)


def _recover_records(store: Store, study_id: int, jobs_dir: Path) -> int:
    """Records a job wrote before this process died between writing and storing them:
    store them now, so nothing measured is lost or measured again."""
    if not jobs_dir.is_dir():
        return 0
    stored = store.stored_runs(study_id)
    count = 0
    for out_dir in sorted(p for p in jobs_dir.iterdir() if p.is_dir()):
        for record in read_records(out_dir):
            if (record.cell_id, record.repetition) not in stored:
                store.add_record(study_id, record, source_dir=out_dir)
                stored.add((record.cell_id, record.repetition))
                count += 1
        shutil.rmtree(out_dir, ignore_errors=True)
    return count
