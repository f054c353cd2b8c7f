"""The executor: runs one job (one file-system instance and the runs made on it) and hands
back a self-contained RunRecord per run through a callback. It depends on no state of the
runner, so the same jobs can later be executed elsewhere.

Order of one job: provision device -> mkfs -> mount -> quiesce -> for each run: drop
caches, workload, device counters -> unmount -> release device. Every step that acquires
something is a context manager, so release happens on success, failure and Ctrl-C alike.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import shutil
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cgroups import MemoryLimit, memory_limit
from .commands import run_command
from .devices import DEVICES, DeviceHandle
from .errors import CommandFailed, FslabError
from .filesystems import FILESYSTEMS, describe, mkfs, mounted, quiesce
from .metrics import unit_of
from .plan import Job, Run
from .provenance import fs_tool_version, host_facts
from .records import STATUS_FAILED, STATUS_OK, Metric, RunRecord
from .spec import DeviceSection
from .trace.hook import RunTrace, traced
from .workloads import WORKLOADS, RunContext, WorkloadResult

DROP_CACHES = Path("/proc/sys/vm/drop_caches")


@dataclass(frozen=True)
class ExecContext:
    """What an executor needs besides the job: all plain data."""

    device: DeviceSection
    results_dir: Path
    artifact_root: Path  # relative to results_dir
    work_dir: Path  # images and mount points
    study_dir: Path
    allowed_devices: frozenset[str]
    drop_caches: bool
    fresh: str
    order_seed: int
    sequence_of: dict[str, int]  # run key -> position in the study's order
    trace: bool = False  # block-layer trace of every run (fslab.trace.hook)
    simulate: tuple[str, ...] = ()  # device models each traced run is replayed on (predictions.py)


def drop_caches() -> None:
    """Write back dirty pages, then drop page cache, dentries and inodes."""
    run_command(["sync"], timeout=600)
    DROP_CACHES.write_text("3\n")


def _device_counter_metrics(before: dict[str, int], after: dict[str, int]) -> list[Metric]:
    """Requests and sectors the device completed during the workload (/sys/block stat)."""
    out = []
    for direction in ("read", "write", "discard", "flush"):
        if f"{direction}_ios" not in after:  # kernels before 4.18 (discard) / 5.5 (flush)
            continue
        ios = after[f"{direction}_ios"] - before[f"{direction}_ios"]
        out.append(Metric.of(f"device_{direction}_requests_count", ios))
        if direction != "flush":
            sectors = after[f"{direction}_sectors"] - before[f"{direction}_sectors"]
            out.append(Metric.of(f"device_{direction}_sectors_count", sectors))
    return out


@contextlib.contextmanager
def _maybe_memory_limit(limit: int | None) -> Iterator[MemoryLimit | None]:
    if limit is None:
        yield None
    else:
        with memory_limit(limit) as cg:
            yield cg


class _JobState:
    """Facts gathered while the file system was made, shared by the job's runs."""

    def __init__(self) -> None:
        self.facts: dict[str, Any] = {}
        self.texts: dict[str, str] = {}


def execute_job(job: Job, ctx: ExecContext, emit: Callable[[RunRecord], None]) -> None:
    """Run every run of ``job``; ``emit`` receives each record as soon as it exists.

    Errors that concern one run (the workload failed, timed out, printed garbage) become
    failed records. Errors making the file system fail every run of the job. Errors that
    concern the whole study (device refused, disk full, missing tool) propagate.
    """
    cell = job.cell
    fstype = FILESYSTEMS.get(cell.fs_type)
    device_kind = DEVICES.get(ctx.device.kind)
    # The owner's pid in the name lets `fslab cleanup` tell a live study from a dead one.
    tag = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    job_started = time.time()
    state = _JobState()
    if job.resumed_without:
        state.facts["resumed_pass_without"] = list(job.resumed_without)
    pending = list(job.runs)
    try:
        with device_kind.provision(ctx.device, ctx.work_dir, tag, ctx.allowed_devices) as dev:
            state.facts["device"] = dev.facts
            t0 = time.monotonic()
            state.texts["mkfs.txt"] = mkfs(fstype, dev, list(cell.mkfs))
            state.facts["mkfs_s"] = round(time.monotonic() - t0, 3)
            mountpoint = ctx.work_dir / f"mnt-{tag}"
            with mounted(fstype, dev, list(cell.mount), mountpoint) as mnt:
                state.facts["quiesce_s"] = round(quiesce(dev), 3)
                info, info_text = describe(fstype, dev, mountpoint)
                state.texts["fsinfo.txt"] = info_text
                state.facts["filesystem"] = {
                    "type": fstype.name,
                    "mkfs_argv": fstype.mkfs_argv(dev.path, list(cell.mkfs)),
                    "mkfs_version": fs_tool_version(fstype.name),
                    "mount_options_requested": list(cell.mount),
                    "mount_options_in_effect": mnt.options_in_effect,
                    "mounted_as": mnt.fs_type_in_effect,
                    "info": info,
                }
                while pending:
                    # A run's wall time starts after the file system was made (mkfs_s and
                    # quiesce_s are in provenance), so first and later runs compare.
                    emit(_execute_run(pending[0], dev, mountpoint, ctx, state, time.time()))
                    done = pending.pop(0)
                    if pending:  # the next run on this file system starts from an empty dir
                        shutil.rmtree(mountpoint / f"fslab-{done.key}", ignore_errors=True)
                        state.facts["previous_runs_removed"] = state.facts.get(
                            "previous_runs_removed", []) + [done.key]
    except (CommandFailed, FslabError) as exc:
        if not pending or not _is_job_level(exc):
            raise
        # mkfs or mount failed: every run not yet done fails with the same reason.
        for run in pending:
            emit(_failed_record(run, ctx, state, job_started, f"file system setup failed: {exc}"))


def _is_job_level(exc: Exception) -> bool:
    """mkfs/mount failures belong to the job; device refusals and the like to the study."""
    return isinstance(exc, CommandFailed) and exc.argv[0].startswith(("mkfs", "mount"))


def _artifact_dir(run: Run, ctx: ExecContext) -> tuple[Path, str]:
    relative = ctx.artifact_root / run.key
    path = ctx.results_dir / relative
    path.mkdir(parents=True, exist_ok=True)
    return path, str(relative)


def _base_provenance(run: Run, ctx: ExecContext, state: _JobState) -> dict[str, Any]:
    cell = run.cell
    return {
        "host": host_facts(),
        "backend": cell.backend,
        "fresh": ctx.fresh,
        "order_seed": ctx.order_seed,
        "workload": {"kind": cell.workload_kind, "params": cell.params},
        **state.facts,
    }


def _failed_record(run: Run, ctx: ExecContext, state: _JobState, started: float, error: str) -> RunRecord:
    path, relative = _artifact_dir(run, ctx)
    (path / "error.txt").write_text(error + "\n")
    for name, text in state.texts.items():
        (path / name).write_text(text)
    return _failed(run, ctx, _base_provenance(run, ctx, state), started, relative, error)


def _execute_run(
    run: Run, dev: DeviceHandle, mountpoint: Path, ctx: ExecContext, state: _JobState,
    started: float,
) -> RunRecord:
    cell = run.cell
    workload = WORKLOADS.get(cell.workload_kind)
    path, relative = _artifact_dir(run, ctx)
    for name, text in state.texts.items():
        (path / name).write_text(text)
    provenance = _base_provenance(run, ctx, state)
    provenance["tools"] = workload.tool_versions()
    provenance["caches_dropped"] = ctx.drop_caches
    workdir = mountpoint / f"fslab-{run.key}"
    workdir.mkdir()
    run_ctx = RunContext(workdir=workdir, device=dev, artifact_dir=path, timeout_s=cell.timeout_s,
                         memory=None, study_dir=ctx.study_dir)
    try:
        prepare = getattr(workload, "prepare", None)
        if prepare is not None:
            prepare(cell.params, run_ctx)
            # Let the layout's writeback and journal commits finish before counting.
            provenance["prepare_quiesce_s"] = round(quiesce(dev), 3)
        if ctx.drop_caches:
            drop_caches()
        before = dev.read_stat()
        t0 = time.monotonic()
        with _maybe_memory_limit(cell.memory_bytes) as cg, traced(ctx.trace, dev, path) as run_trace:
            provenance["memory_limit"] = cg.describe() if cg else None
            result = workload.run(cell.params, dataclasses.replace(run_ctx, memory=cg))
    except FslabError as exc:
        # The workload failed, timed out or printed garbage: this run fails, the study goes
        # on. Subclasses (missing tool, device refused, bad spec) concern the whole study.
        if not isinstance(exc, CommandFailed) and type(exc) is not FslabError:
            raise
        (path / "error.txt").write_text(str(exc) + "\n")
        return _failed(run, ctx, provenance, started, relative, str(exc))
    except Exception as exc:  # a bug in a workload plug-in must not cost the study
        _study_level_os_error(exc)
        (path / "error.txt").write_text(traceback.format_exc())
        return _failed(run, ctx, provenance, started, relative,
                       f"internal error in workload {cell.workload_kind}: {exc!r}")
    workload_s = time.monotonic() - t0
    finished = time.time()
    try:
        metrics = _collect_metrics(result, before, dev, run_trace, ctx, cell.params, provenance)
    except Exception as exc:  # the measurement is kept on disk; the study goes on
        _study_level_os_error(exc)
        (path / "error.txt").write_text(traceback.format_exc())
        return _failed(run, ctx, provenance, started, relative,
                       f"the workload ran, but collecting its results failed: {exc!r}")
    metrics.append(Metric.of("wall_s", finished - started))
    metrics.append(Metric.of("overhead_s", (finished - started) - result.tool_runtime_s))
    provenance["workload_s"] = round(workload_s, 3)
    provenance["tool_info"] = result.info
    return RunRecord(
        cell_id=cell.id, repetition=run.repetition, sequence=ctx.sequence_of[run.key],
        status=STATUS_OK, started_at=started, finished_at=finished, metrics=tuple(metrics),
        provenance=provenance, artifact_dir=relative,
    )


def _collect_metrics(result: WorkloadResult, before: dict[str, int], dev: DeviceHandle,
                     run_trace: RunTrace | None, ctx: ExecContext, params: dict[str, Any],
                     provenance: dict[str, Any]) -> list[Metric]:
    """The workload's metrics, the device's counters and, for traced runs, trace metrics
    and device-model predictions."""
    # A traced run's counters span exactly the traced window, so they match the trace.
    if run_trace is not None and run_trace.stat_before:
        before = run_trace.stat_before
    after = run_trace.stat_after if run_trace is not None and run_trace.stat_after else dev.read_stat()
    metrics = [Metric.of(name, value) for name, value in result.metrics.items()]
    metrics += [Metric(name, None, unit_of(name), note) for name, note in result.notes.items()]
    metrics += _device_counter_metrics(before, after)
    if run_trace is not None:
        metrics += run_trace.metrics(result.metrics)
        provenance["trace"] = run_trace.provenance()
        if ctx.simulate and run_trace.result is not None:
            from .predictions import predict_run

            predicted, provenance["predictions"] = predict_run(
                run_trace.path, ctx.simulate, params, run_trace.result)
            metrics += predicted
    return metrics


def _failed(run: Run, ctx: ExecContext, provenance: dict[str, Any], started: float,
            relative: str, error: str) -> RunRecord:
    return RunRecord(
        cell_id=run.cell.id, repetition=run.repetition, sequence=ctx.sequence_of[run.key],
        status=STATUS_FAILED, started_at=started, finished_at=time.time(), error=error,
        provenance=provenance, artifact_dir=relative,
    )


_STUDY_LEVEL_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}


def _study_level_os_error(exc: BaseException) -> None:
    """A full or read-only results disk fails every run alike: stop the study (what is
    stored stays) instead of recording one failure after another."""
    if isinstance(exc, OSError) and exc.errno in _STUDY_LEVEL_ERRNOS:
        raise FslabError(f"cannot write results: {exc} — free space (or make the results "
                         "directory writable) and continue with --resume") from exc
