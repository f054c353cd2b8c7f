"""Executing one job (one file-system instance and the runs made on it): a self-contained
RunRecord per run, handed back through a callback. It depends on nothing but the job
(plain data), its folder and a work directory, so the same job runs alike in this
process, in `fslab job run`, in a guest or on another machine.

Each run's artifacts go to the job folder's ``runs/<run key>/``; its record names that
folder relative to the job folder, and the store moves it into the results directory.

Order of one job: provision device -> mkfs -> mount -> quiesce -> for each run: drop
caches, workload, device counters -> unmount -> release device. Every step that acquires
something is a context manager, so release happens on success, failure and Ctrl-C alike.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..datarecords import datarecord, replace
from ..devices import DEVICES, DeviceHandle
from ..errors import STUDY_LEVEL_ERRNOS, CommandFailed, FslabError, JobFailed, ResultsUnwritable, WorkloadFailed
from ..filesystems import FILESYSTEMS, describe, quiesce
from ..jobdata.model import Job, Run
from ..jobdata.record import Metric, RunRecord, failed_record
from ..jobdata.terms import STATUS_OK
from ..kernel_log import KERNEL_IO_ERRORS, DiskErrorWatch, describe_errors
from ..pagecache import drop_caches, sync_filesystem
from ..provenance import fs_tool_version, host_facts
from ..toolpages import ToolPages
from ..units import format_bytes
from ..workloads import WORKLOADS, RunContext, Workload, WorkloadResult
from .folder import RUN_ERROR_FILE, JobFolder, fail_unfinished
from .tracing import RunTrace, traced

# Aging (pydantic), layout facts and memory cgroups load only for the jobs that use them.
if TYPE_CHECKING:
    from ..aged_images import AgedCopy
    from ..aging_option import AgingOption
    from ..cgroups import MemoryLimit


@datarecord(frozen=True)
class ExecContext:
    """Where a job writes: its folder (records and artifacts) and its work directory
    (images and mount points)."""

    job: Job
    folder: JobFolder
    work_dir: Path


def _device_counter_metrics(before: dict[str, int], after: dict[str, int]) -> list[Metric]:
    """Requests and sectors the device completed during the workload (/sys/class/block stat;
    a partition has no flush count of its own: the kernel counts flushes on the whole disk)."""
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
        from ..cgroups import memory_limit

        with memory_limit(limit) as cg:
            yield cg


class _JobState:
    """Facts gathered while the file system was made, shared by the job's runs."""

    def __init__(self) -> None:
        self.facts: dict[str, Any] = {}
        self.texts: dict[str, str] = {}
        self.aging_metrics: dict[str, float] = {}  # the aged state every run started from
        self.tool_pages = ToolPages()  # the workloads' executables, kept cached across drops
        self.disk_errors = DiskErrorWatch()  # the kernel's I/O errors on the job's disks
        self.disk_names: set[str] = set()
        # reuse_layout: a layout's directory name -> the run that laid it out (this pass)
        self.layouts: dict[str, str] = {}


def execute_job(job: Job, folder: JobFolder, work_dir: Path, emit: Callable[[RunRecord], None]) -> None:
    """Run every run of ``job``; ``emit`` receives each record as soon as it exists.

    Errors are handled by their scope (fslab.errors): a run's error becomes its failed
    record; an error while the device and file system are made and mounted fails every
    run of the job; a study's error (device refused, disk full, missing tool) propagates.
    """
    ctx = ExecContext(job, folder, work_dir)
    cell = job.cell
    settings = job.settings
    fstype = FILESYSTEMS.get(cell.fs_type)
    device_kind = DEVICES.get(settings.device["kind"])
    section = device_kind.from_job(settings.device)  # checked when planned: no pydantic here
    aging = _aging_option(cell.aging) if cell.aging is not None else None
    # The owner's pid in the name lets `fslab cleanup` tell a live study from a dead one.
    tag = f"{os.getpid()}-{os.urandom(4).hex()}"
    job_started = time.time()
    state = _JobState()
    if job.resumed_without:
        state.facts["resumed_pass_without"] = list(job.resumed_without)
    pending = list(job.runs)
    state.facts["kernel_log"] = state.disk_errors.unavailable or "checked for block I/O errors"
    try:
        with _setup_step(), _device_for(job, section, work_dir, tag, aging) as (dev, aged_copy):
            state.facts["device"] = dev.facts
            state.disk_names = dev.kernel_names()
            state.disk_errors.skip_to_now()  # earlier lines name the devices that had these names
            if aged_copy is None:
                with _setup_step():
                    t0 = time.monotonic()
                    state.texts["mkfs.txt"] = fstype.make(dev, list(cell.mkfs))
                    state.facts["mkfs_s"] = round(time.monotonic() - t0, 3)
            else:  # made (and aged) once for every repetition: its cost is in the facts
                state.facts.update(aged_copy.provenance())
                state.aging_metrics = aged_copy.report.metrics()
            with _setup_step(), fstype.mounted(dev, list(cell.mount), work_dir / f"mnt-{tag}") as mnt:
                mountpoint = mnt.mountpoint
                if aging is not None and aged_copy is None:  # not an image file: aged in place
                    from ..aging import age

                    report = age(mountpoint, aging)
                    state.facts["aging"] = report.as_dict()
                    state.aging_metrics = report.metrics()
                state.facts["quiesce_s"] = round(quiesce(dev), 3)
                info, info_text = describe(fstype, dev, mountpoint)
                state.disk_errors.refuse(state.disk_names, "while it was made, mounted or aged",
                                         "no run is stored as ok", JobFailed)
                state.texts["fsinfo.txt"] = info_text
                state.facts["filesystem"] = {
                    "type": fstype.name,
                    "mkfs_argv": fstype.mkfs_argv(dev.path, list(cell.mkfs)) if fstype.mkfs_tool else [],
                    "mkfs_version": fs_tool_version(fstype.name),
                    "mount_options_requested": list(cell.mount),
                    "mount_options_in_effect": mnt.options_in_effect,
                    "mounted_as": mnt.fs_type_in_effect,
                    "info": info,
                }
                while pending:
                    # A run's wall time starts after the file system was made (mkfs_s and
                    # quiesce_s are in provenance), so first and later runs compare.
                    record = _execute_run(pending[0], dev, mountpoint, ctx, state, time.time())
                    emit(record)
                    done = pending.pop(0)
                    if record.status != STATUS_OK:  # its shared files may be half-written
                        _forget_layout(record, mountpoint, state)
                    own = mountpoint / f"fslab-{done.key}"
                    if pending and own.exists():  # the next run starts from an empty dir
                        shutil.rmtree(own, ignore_errors=True)
                        state.facts["previous_runs_removed"] = state.facts.get(
                            "previous_runs_removed", []) + [done.key]
    except JobFailed as exc:
        if not pending:  # every run is stored; releasing the device failed: say so
            raise FslabError(f"releasing the device or file system failed: {exc}") from exc
        for record in fail_unfinished(pending, [], str(exc), started=job_started, folder=folder,
                                      provenance=lambda run: _base_provenance(run, ctx, state),
                                      files=state.texts):
            emit(record)
    finally:
        state.tool_pages.close()
        state.disk_errors.close()


@contextlib.contextmanager
def _device_for(job: Job, section: Any, work_dir: Path, tag: str,
                aging: AgingOption | None) -> Iterator[tuple[DeviceHandle, AgedCopy | None]]:
    """The job's device. An aged file system on an image-file device is a copy of an
    image aged once per (file system, mkfs and mount options, size, aging), kept in the
    work directory, so every repetition starts from the same state; else a fresh device."""
    cell = job.cell
    kind = DEVICES.get(job.settings.device["kind"])
    if aging is not None and job.settings.preaged is not None:  # a guest's disk, aged by the host's cache
        from ..aged_images import AgedCopy

        with kind.provision(section, work_dir, tag, job.grant) as dev:
            yield dev, AgedCopy.from_dict(job.settings.preaged)
    elif aging is not None and kind.image_file:
        from ..aged_images import AGED_IMAGES_DIR, aged_image_device

        image_dir = Path(section.image_dir) if section.image_dir else work_dir
        with aged_image_device(cell.fs_type, list(cell.mkfs), list(cell.mount), section.size, aging,
                               image_dir, work_dir / AGED_IMAGES_DIR, tag) as (dev, copy):
            yield dev, copy
    else:
        with kind.provision(section, work_dir, tag, job.grant) as dev:
            yield dev, None


def _aging_option(data: dict[str, Any]) -> AgingOption:
    """The cell's aging option, typed. Imported here, not at the top: the option is a
    pydantic model, and a job without aging (most) runs without loading pydantic."""
    from ..aging_option import AgingOption

    return AgingOption.model_validate(data)


@contextlib.contextmanager
def _setup_step() -> Iterator[None]:
    """Making the device and the file system: an error of a run's scope (mkfs or mount
    exited non-zero) fails the job's runs; a study's error stops the study."""
    try:
        yield
    except FslabError as exc:
        if exc.scope == "study" or isinstance(exc, JobFailed):
            raise
        raise JobFailed(f"file system setup failed: {exc}") from exc


def _base_provenance(run: Run, ctx: ExecContext, state: _JobState) -> dict[str, Any]:
    cell = run.cell
    return {
        "host": host_facts(),
        "backend": cell.backend,
        "job": ctx.job.id,
        "fresh": ctx.job.settings.fresh,
        "timeout_s": cell.timeout_s,  # the limit this run had (a retry may have raised it)
        "order_seed": ctx.job.settings.order_seed,
        "workload": {"kind": cell.workload_kind, "params": cell.params},
        **state.facts,
    }


def _execute_run(
    run: Run, dev: DeviceHandle, mountpoint: Path, ctx: ExecContext, state: _JobState,
    started: float,
) -> RunRecord:
    cell = run.cell
    workload = WORKLOADS.get(cell.workload_kind)
    path, relative = ctx.folder.run_dir(run.key)
    for name, text in state.texts.items():
        (path / name).write_text(text)
    provenance = _base_provenance(run, ctx, state)
    settings = ctx.job.settings
    provenance["tools"] = workload.tool_versions()
    caveats = workload.caveats(cell.params, state.facts.get("filesystem") or {})
    if caveats:  # shown beside the cell: the run measured something other than asked
        provenance["caveats"] = caveats
    provenance["caches_dropped"] = settings.drop_caches
    if workload.capabilities.phases:  # its trace and counters hold every phase: no one figure's
        provenance["workload_phases"] = True
    layout = _shared_layout(run, workload, ctx.job.settings.reuse_layout)
    laid_out_by = state.layouts.get(layout) if layout else None
    if layout:
        workdir = mountpoint / layout
        workdir.mkdir(exist_ok=True)
        provenance["layout"] = {"directory": layout, "laid_out_by": laid_out_by or run.key,
                                "reused": laid_out_by is not None}
    else:
        workdir = mountpoint / f"fslab-{run.key}"
        workdir.mkdir()
    run_ctx = RunContext(workdir=workdir, device=dev, artifact_dir=path, timeout_s=cell.timeout_s,
                         memory=None, inputs=cell.inputs, allow_exec=settings.allow_exec)
    try:
        if laid_out_by is None and workload.prepare(cell.params, run_ctx):
            # Let the layout's writeback and journal commits finish before counting.
            provenance["prepare_quiesce_s"] = round(quiesce(dev), 3)
        free_before = None
        if cell.aging is not None or workload.capabilities.free_space_facts:
            from ..fragmentation import free_space_histogram

            # Before counters start: the tools read the device themselves.
            free_before = free_space_histogram(mountpoint)
            provenance["free_space_before"] = free_before.as_dict()
        if settings.drop_caches:
            if cell.memory_bytes is None:  # a limited run's tool pages stay charged to its cgroup
                provenance["tool_pages_kept_bytes"] = state.tool_pages.hold(list(workload.tools))
            drop_caches()
        before = dev.read_stat()
        t0 = time.monotonic()
        with _maybe_memory_limit(cell.memory_bytes) as cg, traced(settings.trace, dev, path) as run_trace:
            provenance["memory_limit"] = cg.describe() if cg else None
            try:
                result = workload.run(cell.params, replace(run_ctx, memory=cg))
            except CommandFailed as exc:
                raise _explained(exc, cg, cell.timeout_s) from exc
            if run_trace is not None:
                # What the workload left dirty is I/O it caused: written back inside the
                # traced window, so trace, counters and predictions hold all of it.
                synced = time.monotonic()
                sync_filesystem(workdir)
                provenance["writeback_after_workload_s"] = round(time.monotonic() - synced, 3)
    except FslabError as exc:
        # The workload failed, timed out or printed garbage: this run fails, the study goes
        # on. Errors of the study's scope (missing tool, device refused) stop it.
        if exc.scope == "study":
            raise
        message = _with_disk_errors(str(exc), state, provenance)
        (path / RUN_ERROR_FILE).write_text(message + "\n")
        return failed_record(run, message, started=started, provenance=provenance, artifact_dir=relative)
    except Exception as exc:  # a bug in a workload plug-in must not cost the study
        _study_level_os_error(exc)
        (path / RUN_ERROR_FILE).write_text(_traceback())
        return failed_record(run, _with_disk_errors(f"internal error in workload {cell.workload_kind}: {exc!r}", state,
                                                          provenance),
                             started=started, provenance=provenance, artifact_dir=relative)
    workload_s = time.monotonic() - t0
    finished = time.time()
    if layout and laid_out_by is None:
        state.layouts[layout] = run.key
    disk_errors = state.disk_errors.take(state.disk_names)
    if disk_errors:
        message = describe_errors(disk_errors, "during the run")
        provenance[KERNEL_IO_ERRORS] = disk_errors
        (path / RUN_ERROR_FILE).write_text(message + "\n" + "\n".join(disk_errors) + "\n")
        return failed_record(run, message, started=started, provenance=provenance, artifact_dir=relative)
    try:
        metrics = _collect_metrics(result, before, dev, run_trace, ctx, cell.params, provenance, workload)
        metrics += [Metric.of(name, value) for name, value in state.aging_metrics.items()]
        if free_before is not None:  # after the device counters were read
            from ..fragmentation import free_space_histogram

            free_after = free_space_histogram(mountpoint)
            provenance["free_space_after"] = free_after.as_dict()
            for when, hist in (("before", free_before), ("after", free_after)):
                if hist.available:  # else provenance says why (no FIEMAP), no count is made up
                    metrics.append(Metric.of(f"free_space_{when}_free_extents_count", hist.free_extents))
    except Exception as exc:  # the measurement is kept on disk; the study goes on
        _study_level_os_error(exc)
        (path / RUN_ERROR_FILE).write_text(_traceback())
        return failed_record(run, f"the workload ran, but collecting its results failed: {exc!r}",
                             started=started, provenance=provenance, artifact_dir=relative)
    metrics.append(Metric.of("wall_s", finished - started))
    metrics.append(Metric.of("overhead_s", (finished - started) - result.tool_runtime_s))
    provenance["workload_s"] = round(workload_s, 3)
    provenance["tool_info"] = result.info
    return RunRecord(
        cell_id=cell.id, repetition=run.repetition, sequence=run.sequence,
        status=STATUS_OK, started_at=started, finished_at=finished, metrics=tuple(metrics),
        provenance=provenance, artifact_dir=relative,
    )


def _shared_layout(run: Run, workload: Workload, reuse_layout: bool) -> str | None:
    """With reuse_layout, the directory of the run's files, named by their identity
    (Workload.layout_key): every run of the pass with the same files uses it."""
    key = workload.layout_key(run.cell.params) if reuse_layout else None
    if key is None:
        return None
    import hashlib

    return "fslab-layout-" + hashlib.sha256(f"{run.cell.workload_kind}\0{key}".encode()).hexdigest()[:16]


def _forget_layout(record: RunRecord, mountpoint: Path, state: _JobState) -> None:
    """A run that failed on shared files leaves them as it left them: the next run with
    the same files lays them out again."""
    layout = (record.provenance.get("layout") or {}).get("directory")
    if layout:
        state.layouts.pop(layout, None)
        shutil.rmtree(mountpoint / layout, ignore_errors=True)


def _with_disk_errors(message: str, state: _JobState, provenance: dict[str, Any]) -> str:
    """A failed run's reason, with the disk errors the kernel logged meanwhile (they may
    be the cause; taken here so they are not blamed on the next run)."""
    errors = state.disk_errors.take(state.disk_names)
    if not errors:
        return message
    provenance[KERNEL_IO_ERRORS] = errors
    return f"{message}; and {describe_errors(errors, 'during the run')}"


def _explained(exc: CommandFailed, cg: MemoryLimit | None, timeout_s: float | None) -> FslabError:
    """Say why a workload's command died in the study's words: the memory limit that
    killed it, or the time limit it hit (not just "status -9")."""
    if cg is not None and cg.oom_kills() > 0:
        return WorkloadFailed(
            f"killed by the memory limit (memory = {format_bytes(cg.limit_bytes)}): the workload "
            f"needs more than that; raise the workload's memory or lower its data size\n  ({exc})")
    if exc.timed_out:
        source = (f"timeout = {timeout_s:g} s" if timeout_s is not None
                  else "the workload's default limit; set the workload's timeout to change it")
        return WorkloadFailed(f"timed out after {exc.timeout_s:g} s ({source})\n  ({exc})")
    return exc


def _collect_metrics(result: WorkloadResult, before: dict[str, int], dev: DeviceHandle,
                     run_trace: RunTrace | None, ctx: ExecContext, params: dict[str, Any],
                     provenance: dict[str, Any], workload: Workload) -> list[Metric]:
    """The workload's metrics, the device's counters and, for traced runs, trace metrics
    and device-model predictions."""
    # A traced run's counters span exactly the traced window, so they match the trace.
    if run_trace is not None and run_trace.stat_before:
        before = run_trace.stat_before
    after = run_trace.stat_after if run_trace is not None and run_trace.stat_after else dev.read_stat()
    metrics = [Metric.of(name, value) for name, value in result.metrics.items()]
    metrics += [Metric.of(name, None, note) for name, note in result.notes.items()]
    metrics += _device_counter_metrics(before, after)
    if run_trace is not None:
        metrics += run_trace.metrics(result.metrics)
        provenance["trace"] = run_trace.provenance()
        if ctx.job.settings.simulate and run_trace.result is not None:
            from ..predictions import predict_run, read_run_trace

            try:  # read once for the whole-run and the per-test replays
                loaded = read_run_trace(run_trace.path)
            except (FslabError, OSError, ValueError, KeyError):
                loaded = None  # each replay says why in its metrics' notes
            rates = {name: result.metrics[name] for name in workload.work_rates(params, result.metrics)}
            queue_depth = workload.queue_depth(params)
            predicted, provenance["predictions"] = predict_run(
                run_trace.path, ctx.job.settings.simulate, queue_depth, run_trace.result, rates,
                result.tool_runtime_s, ctx.job.settings.models, loaded)
            metrics += predicted
            metrics += _phase_predictions(result, run_trace, ctx, queue_depth, provenance, loaded)
    return metrics


def _phase_predictions(result: WorkloadResult, run_trace: RunTrace, ctx: ExecContext, queue_depth: int,
                       provenance: dict[str, Any], loaded: tuple[Any, Any] | None) -> list[Metric]:
    """Each test's figure on each model, for a workload that says when its tests ran
    (``WorkloadResult.phases``, e.g. Bonnie++): fslab.phase_predictions."""
    if not result.phases:
        return []
    from ..phase_predictions import predict_phases

    trace_note = None
    if run_trace.result is not None and not run_trace.result.get("complete", True):
        trace_note = f"incomplete trace: {run_trace.result.get('lost_events')} events lost"
    predicted, provenance["phase_predictions"] = predict_phases(
        run_trace.path, result.phases, ctx.job.settings.simulate, queue_depth, ctx.job.settings.models,
        trace_note, loaded)
    return predicted


def _traceback() -> str:
    """The exception being handled, as Python prints it (traceback loads only on errors)."""
    import traceback

    return traceback.format_exc()


def _study_level_os_error(exc: BaseException) -> None:
    """A full or read-only results disk fails every run alike: stop the study (what is
    stored stays) instead of recording one failure after another."""
    if isinstance(exc, OSError) and exc.errno in STUDY_LEVEL_ERRNOS:
        raise ResultsUnwritable(f"cannot write results: {exc} — free space (or make the results "
                                "directory writable) and continue with --resume") from exc
