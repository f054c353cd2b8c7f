"""The runner: turns a study file into stored results. It plans, checks that everything
needed is present before anything is written, hands jobs to the executor in order, stores
each record as it arrives, and resumes an interrupted study without repeating a run."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .cgroups import detect_version
from .commands import require_tool
from .devices import DEVICES
from .errors import FslabError, MissingCapability
from .executor import DROP_CACHES, ExecContext, execute_job
from .filesystems import FILESYSTEMS
from .plan import Job, Plan, make_plan
from .provenance import host_facts
from .records import RunRecord
from .signals import install_handlers
from .spec import StudySpec, load_spec
from .store import Store
from .workloads import WORKLOADS

WORK_DIR_NAME = ".work"


@dataclass(frozen=True)
class StudyOutcome:
    study_id: int
    results_dir: Path
    runs_done: int
    runs_failed: int
    runs_skipped_as_stored: int
    plan: Plan
    wall_s: float


@contextlib.contextmanager
def study_lock(results_dir: Path) -> Iterator[None]:
    """One running study per results directory: two processes resuming the same study
    would measure the same runs twice. The kernel drops the lock if we die."""
    path = results_dir / ".lock"
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            owner = f.read().strip() or "?"
            raise FslabError(
                f"another fslab (pid {owner}) is running a study in {results_dir}: wait for it, "
                "or use another --results directory"
            ) from None
        f.seek(0)
        f.truncate()
        f.write(str(os.getpid()))
        f.flush()
        yield


def spec_hash(text: str, quick: bool) -> str:
    return hashlib.sha256((text + f"\n#quick={quick}").encode()).hexdigest()


def preflight(spec: StudySpec, plan: Plan, allowed: frozenset[str], work_dir: Path,
              resuming: bool = False) -> None:
    """Everything a study needs, checked before the first mkfs. Lists every missing piece."""
    problems: list[str] = []
    if os.geteuid() != 0:
        problems.append("fslab must run as root (it makes loop devices, file systems and mounts)")
    tools = {"losetup", "mount", "umount", "blkid", "wipefs", "sync"}
    needs_cgroup = False
    for cell in plan.cells:
        tools.add(FILESYSTEMS.get(cell.fs_type).mkfs_tool)
        workload = WORKLOADS.get(cell.workload_kind)
        tools.update(workload.tools)
        needs_cgroup |= cell.memory_bytes is not None or "memory_limit" in workload.capabilities
        if spec.study.trace and "traceable" not in workload.capabilities:
            problems.append(f"workload kind {cell.workload_kind!r} cannot be traced (study.trace)")
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
    if spec.device.kind == "image" and not Path("/dev/loop-control").exists():
        problems.append("no loop device support (/dev/loop-control): modprobe loop")
    if problems:
        raise MissingCapability("this study cannot run here:\n  " + "\n  ".join(problems),
                                fix="`fslab doctor` lists what is missing and how to install it")
    kind = DEVICES.get(spec.device.kind)
    if kind.preflight:
        kind.preflight(spec.device, allowed, work_dir, resuming)


def run_study(
    study: str,
    *,
    results_dir: Path,
    quick: bool = False,
    resume: bool = False,
    allowed_devices: frozenset[str] = frozenset(),
    on_start: Callable[[Plan, int, int], None] | None = None,
    on_record: Callable[[RunRecord, str], None] | None = None,
) -> StudyOutcome:
    """Run (or resume) a study. ``on_start(plan, study_id, remaining)`` and
    ``on_record(record, label)`` let the CLI draw progress; the runner prints nothing."""
    started = time.monotonic()
    # Mount points are compared with /proc/mounts, which holds canonical paths.
    results_dir.mkdir(parents=True, exist_ok=True)
    results_dir = results_dir.resolve()
    spec, source, text = load_spec(study)
    digest = spec_hash(text, quick)
    study_dir = Path(source).parent if Path(source).is_file() else Path.cwd()
    with study_lock(results_dir), Store(results_dir) as store:
        previous = store.resumable(digest) if resume else None
        if resume and previous is None:
            raise FslabError(
                f"--resume: no unfinished run of {source} (quick={quick}) in {results_dir}; "
                "run it without --resume to start it"
            )
        plan = make_plan(spec, quick=quick, seed=previous.seed if previous else None, source=source)
        preflight(spec, plan, allowed_devices, results_dir / WORK_DIR_NAME,
                  resuming=previous is not None)
        if previous is not None:
            study_id = previous.id
            store.set_status(study_id, "running")
        else:
            study_id = store.create_study(
                name=spec.study.name, source=source, spec_text=text, spec_hash=digest,
                plan=plan, host=host_facts(),
            )
        stored = store.stored_runs(study_id)
        todo: list[Job] = []
        for job in plan.jobs:
            remaining = tuple(r for r in job.runs if (r.cell.id, r.repetition) not in stored)
            if remaining:
                done_before = tuple(r.key for r in job.runs if r not in remaining)
                todo.append(Job(remaining, resumed_without=done_before))
        remaining_runs = sum(len(j.runs) for j in todo)
        ctx = ExecContext(
            device=spec.device, results_dir=results_dir,
            artifact_root=Path("artifacts") / f"study-{study_id}",
            work_dir=results_dir / WORK_DIR_NAME, study_dir=study_dir,
            allowed_devices=allowed_devices, drop_caches=spec.study.drop_caches,
            fresh=plan.fresh, order_seed=plan.seed,
            sequence_of={run.key: i for i, run in enumerate(plan.runs)},
            trace=spec.study.trace,
            simulate=tuple(spec.study.simulate),
        )
        if on_start:
            on_start(plan, study_id, remaining_runs)
        counts = {"done": 0, "failed": 0}

        def emit(record: RunRecord) -> None:
            store.add_record(study_id, record)
            counts["done"] += 1
            counts["failed"] += record.status != "ok"
            if on_record:
                label = next(r.cell for j in todo for r in j.runs if r.cell.id == record.cell_id)
                on_record(record, f"{label.filesystem} {label.label} #{record.repetition + 1}")

        install_handlers()
        try:
            for job in todo:
                execute_job(job, ctx, emit)
        except BaseException:
            store.set_status(study_id, "interrupted")
            raise
        store.set_status(study_id, "complete")
    return StudyOutcome(study_id, results_dir, counts["done"], counts["failed"],
                        len(stored), plan, time.monotonic() - started)
