"""Workloads: one module each, named as the workload kind it registers
(``register_workload``) when the registry first asks for that kind. A workload turns a
cell's parameters into a real tool run on a mounted file system and returns metrics with
declared units.

Contract of an entry (see ``Workload``): ``validate`` normalises and checks parameters
(raising ParamError that names the parameter), ``quick`` scales them down for smoke
runs, ``prepare`` (optional) lays out files before counters and traces start, ``run``
executes in a RunContext and returns a WorkloadResult, or raises an FslabError whose
scope is the run's (WorkloadFailed, CommandFailed: the run is stored as failed, with the
error and the tool's stderr kept). It declares, in its own module, the executables it
runs (``tools``: name -> Debian package), the metrics it produces (``metrics``: name
suffix -> MetricKind) and its ``capabilities``; registration checks the declarations.

Only the plug-in reads its parameters: what other parts need of them it answers itself
(``queue_depth`` for replaying its trace on a device model, ``caveats`` for what a run
measured other than its parameters say), and the phases of a run come back typed in
``WorkloadResult.phases`` (``fslab.workloads.phases.PhaseSpan``, loaded by the workloads
that have phases). tests/workloads/test_contract.py keeps it so.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..commands import declare_tools
from ..datarecords import datarecord, field
from ..devices import DeviceHandle
from ..errors import SpecError
from ..filesystems import direct_io_ignored
from ..metrics import MetricKind, check_declared, declare_metrics
from ..registry import Registry

if TYPE_CHECKING:
    from ..cgroups import MemoryLimit
    from ..spec import WorkloadSection
    from .phases import PhaseSpan


@datarecord(frozen=True)
class RunContext:
    """Everything a workload may use: where to work, where to leave files, limits."""

    workdir: Path  # an empty directory on the file system under test, this run's own
    device: DeviceHandle
    artifact_dir: Path
    timeout_s: float | None
    memory: MemoryLimit | None
    inputs: dict[str, str] = field(default_factory=dict)  # the cell's input files: name -> text
    allow_exec: bool = False  # the user allowed options that run programs (--allow-exec)


@datarecord
class WorkloadResult:
    """What a workload's run gives back: its metrics and what its tool said."""

    metrics: dict[str, float]
    tool_runtime_s: float  # the time the tool itself reports running (for overhead)
    info: dict[str, Any] = field(default_factory=dict)  # what the tool said, kept as the run's provenance
    notes: dict[str, str] = field(default_factory=dict)  # metric -> why it has no number
    # A workload with ``capabilities.phases``: when each phase ran and the work it did, in
    # the order they ran (empty when it cannot say); per-phase predictions split the
    # run's trace by these spans.
    phases: list[PhaseSpan] = field(default_factory=list)


class ParamError(ValueError):
    """A workload parameter is invalid; ``key`` names it so the spec can give its path."""

    def __init__(self, key: str, message: str):
        self.key = key
        super().__init__(message)


@datarecord(frozen=True)
class WorkloadCapabilities:
    """What preflight asks of a workload before the first mkfs."""

    traceable: bool = False  # may run under a block-layer trace (study.trace)
    memory_limited: bool = False  # always runs in a memory cgroup (needs the controller)
    needs_block_device: bool = True  # reads the device's counters; False: runs anywhere
    free_space_facts: bool = False  # free-space fragmentation is recorded before and after
    # Its figures come from phases run one after another in one run (Bonnie++'s tests, the
    # allocation micro-operations): the run's trace and device counters are no one figure's.
    phases: bool = False


class Workload:
    """The contract of a workload plug-in; plug-ins subclass it and override what they do.

    Each declares ``name``, ``capabilities``, ``tools`` (the executables it runs: name ->
    Debian package, checked before a study starts), ``metrics`` (the suffixes of the metric
    names it produces) and ``example`` (a small valid parameter set; registration checks
    its primary metrics are declared). Required: ``validate``, ``quick``,
    ``primary_metrics``, ``tool_versions``, ``run``. The rest have defaults that do nothing.
    """

    name: str
    capabilities: WorkloadCapabilities = WorkloadCapabilities()
    tools: dict[str, str] = {}
    metrics: dict[str, MetricKind] = {}
    example: dict[str, Any] = {}
    # The parameter a study's charts group bars by when the user names none (`--by`),
    # if the study varies it (fio: its access pattern, ``rw``).
    chart_axis: str | None = None

    def validate(self, params: dict[str, Any]) -> dict[str, Any]:
        """Normalised parameters; raises ParamError naming the parameter."""
        raise NotImplementedError

    def quick(self, params: dict[str, Any]) -> dict[str, Any]:
        """The parameters of a smoke run (--quick): smaller, keeping what decides the result."""
        raise NotImplementedError

    def prevalidate(self, param_sets: list[dict[str, Any]]) -> None:
        """Before ``validate`` is called on each of ``param_sets``: a chance to check them all
        with one start of the tool (fio). Raises nothing: ``validate`` reports each error."""

    def primary_metrics(self, params: dict[str, Any]) -> list[str]:
        raise NotImplementedError

    def tool_versions(self) -> dict[str, str | None]:
        raise NotImplementedError

    def run(self, params: dict[str, Any], ctx: RunContext) -> WorkloadResult:
        raise NotImplementedError

    def inputs(self, params: dict[str, Any], study_dir: Path, allow_exec: bool) -> dict[str, str]:
        """The files the workload reads (name -> text), read once when the study is planned
        (relative paths from ``study_dir``); they travel in the job (``RunContext.inputs``)
        and are part of the cell's identity. Raises ParamError naming the parameter."""
        return {}

    def prepare(self, params: dict[str, Any], ctx: RunContext) -> bool:
        """Lay out files before caches are dropped and counters and traces start; returns
        whether it laid out anything (then the file system is let settle first)."""
        return False

    def layout_key(self, params: dict[str, Any]) -> str | None:
        """The identity of the files ``prepare`` lays out (their names and sizes), for a
        study with ``reuse_layout``: runs of one pass with the same key run on the files the
        first of them laid out. None (the default): every run lays out its own."""
        return None

    def preflight(self, params: dict[str, Any], inputs: dict[str, str]) -> list[str]:
        """Problems found before the first mkfs (e.g. a job file fio rejects)."""
        return []

    def fixed_for_study(self, params: dict[str, Any], *, device_bytes: int | None,
                        memory: int | None) -> dict[str, Any]:
        """The parameters with what a run would otherwise choose for itself fixed once for
        the whole study, so every file system is measured at the same settings (Bonnie++'s
        ``size = "auto"``). ``device_bytes``: the smallest device of the study (None:
        unknown); ``memory``: the workload's memory limit. Raises ParamError naming the
        parameter when no setting fits."""
        return params

    def data_bytes(self, params: dict[str, Any], inputs: dict[str, str] | None = None) -> int | None:
        """Bytes of files it lays out (checked against the device's size), None when it
        cannot say (e.g. sizes chosen at run time)."""
        return None

    def runs_program(self, key: str, value: Any) -> str | None:
        """Why a parameter makes the tool run a program as root (refused unless
        --allow-exec), or None."""
        return None

    def default_timeout_s(self, params: dict[str, Any]) -> float:
        return 3600.0

    def declared_runtime_s(self, params: dict[str, Any]) -> float | None:
        """Seconds a run's workload takes by its parameters alone (a time-based fio job),
        or None when it ends when its work is done: a time estimate with no measured
        runs behind it (fslab.estimate) uses it."""
        return None

    def runtime_cap_s(self, params: dict[str, Any]) -> float | None:
        """The seconds at which a run's workload stops if its work is not done sooner (a fio
        job with a runtime but not time_based), or None: an estimate with no measured runs
        behind it says "up to" from it (layout and start come on top)."""
        return None

    def work_rates(self, params: dict[str, Any], metrics: dict[str, float]) -> list[str]:
        """The run's metrics that are the rate of its work over the tool's own runtime (I/Os
        or bytes per second of the whole run), which a device model can predict from the
        time it needs for the run's requests (fslab.predictions). None by default: a
        workload whose figures come from phases run one after another in one trace
        (Bonnie++'s tests) has no single window to predict."""
        return []

    def queue_depth(self, params: dict[str, Any]) -> int:
        """Requests the workload keeps outstanding (its I/O depth times its concurrent jobs
        or threads), at least 1: its trace is replayed on a device model closed loop at no
        less than this depth (fslab.predictions). 1 by default: one request at a time."""
        return 1

    def caveats(self, params: dict[str, Any], filesystem: Mapping[str, Any]) -> list[str]:
        """What made a run measure something else than its parameters say, given the file
        system as the run mounted it (``filesystem``: the run's provenance facts,
        ``mounted_as`` and ``mount_options_in_effect``). None by default."""
        return []


# Each kind is the module of its name, loaded when first asked for (a job loads its own).
WORKLOADS: Registry[Workload] = Registry("workload kind", __name__)

# Smoke runs (--quick): data sizes are divided by QUICK_DIVISOR, but a size is never made
# smaller than QUICK_MIN_SIZE (a size already below it is kept as it is).
QUICK_DIVISOR = 8
QUICK_MIN_SIZE = 64 << 20
# A memory cgroup smaller than this starves the tool itself (fio's own memory is charged).
QUICK_MIN_MEMORY = 16 << 20


def quick_size(size: int) -> int:
    """A smoke run's data size: size / 8, not below 64 MiB (nor above ``size``)."""
    return min(size, max(size // QUICK_DIVISOR, QUICK_MIN_SIZE))


def quick_memory(memory: int | None, full_data: int | None, quick_data: int | None) -> int | None:
    """The memory limit of a smoke run, scaled by the factor its data was scaled by.

    Page-cache behaviour follows the data-to-memory ratio: a quick run whose file fits in
    an unscaled limit turns 4 KiB random writes into merged sequential ones and reverses
    the study's finding. Bonnie++'s ``-r`` and a guest's memory must be scaled with this
    same function. Page-aligned; not below QUICK_MIN_MEMORY (then the ratio is smaller
    than the full run's, never larger). Unknown sizes leave the limit as it is."""
    if memory is None or not full_data or not quick_data or quick_data >= full_data:
        return memory
    scaled = memory * quick_data // full_data // 4096 * 4096
    return min(memory, max(scaled, QUICK_MIN_MEMORY))


def direct_io_caveats(direct: bool, filesystem: Mapping[str, Any]) -> list[str]:
    """The caveat of a workload asking for O_DIRECT (``direct``) on a file system that serves
    it through the page cache (ext3/ext4 with data=journal), for ``Workload.caveats``."""
    if not direct:
        return []
    why = direct_io_ignored(str(filesystem.get("mounted_as", "")), str(filesystem.get("mount_options_in_effect", "")))
    return [why] if why else []


def data_bytes(workload: Workload, params: dict[str, Any]) -> int | None:
    """How much data a workload's run touches (bytes), where its plug-in can say from its
    parameters alone; None when it cannot (e.g. sizes chosen at run time)."""
    return workload.data_bytes(params)


def validate_workload(section: WorkloadSection, *, source: str, field: str,
                      allow_exec: bool = False) -> None:
    """Check a workload's parameters and every value of its axes with its plug-in; a
    parameter that runs a program is refused unless ``allow_exec``."""
    if section.kind not in WORKLOADS:
        raise SpecError(
            f"unknown workload kind {section.kind!r}; known: {', '.join(WORKLOADS.names())}",
            source=source, field=f"{field}.kind",
        )
    workload = WORKLOADS.get(section.kind)
    if not allow_exec:
        _refuse_exec(workload, section, source=source, field=field)
    # Parameters may be completed by axes (size from a layout axis, say), so check the
    # first combination whole, then every axis value within it.
    first = {axis: values[0] for axis, values in section.axes.items()}
    workload.prevalidate(checked_param_sets(section))
    try:
        workload.validate({**section.params, **first})
    except ParamError as exc:
        raise SpecError(str(exc), source=source, field=f"{field}.{exc.key}") from None
    for axis, values in section.axes.items():
        for i, value in enumerate(values):
            try:
                workload.validate({**section.params, **first, axis: value})
            except ParamError as exc:
                where = f"{field}.axes.{axis}[{i}]" if exc.key == axis else f"{field}.{exc.key}"
                extra = "" if exc.key == axis else f" (with {axis} = {value!r})"
                raise SpecError(str(exc) + extra, source=source, field=where) from None


def checked_param_sets(section: WorkloadSection) -> list[dict[str, Any]]:
    """The parameter sets ``validate_workload`` checks: the first combination of the axes,
    then each axis value within it."""
    first = {axis: values[0] for axis, values in section.axes.items()}
    return [{**section.params, **first}] + [{**section.params, **first, axis: value}
                                            for axis, values in section.axes.items() for value in values]


@contextlib.contextmanager
def tools_not_asked() -> Iterator[None]:
    """Validate parameters without running their tools (see ``tools_may_be_asked``)."""
    token = _REGISTERING.set(True)
    try:
        yield
    finally:
        _REGISTERING.reset(token)


def _refuse_exec(workload: Workload, section: WorkloadSection, *, source: str, field: str) -> None:
    found = [(f"{field}.{key}", key, value) for key, value in section.params.items()]
    found += [(f"{field}.axes.{axis}[{i}]", axis, value)
              for axis, values in section.axes.items() for i, value in enumerate(values)]
    for where, key, value in found:
        why = workload.runs_program(key, value)
        if why:
            raise SpecError(f"{why}; it would run as root. Remove it, or pass --allow-exec to "
                            "`fslab run` if you trust what it runs", source=source, field=where)


# While a workload registers, its example is validated without asking its tool (fio
# --parse-only): that would cost every import of fslab a process start, about 1 s in a
# guest under TCG, for an example the workload's tests already run through the tool.
_REGISTERING = contextvars.ContextVar("registering", default=False)


def tools_may_be_asked() -> bool:
    """False while a workload's own example is checked at import: validate parameters
    without running the tool."""
    return not _REGISTERING.get()


def register_workload(workload: Workload) -> Workload:
    """Register a workload; its tools and metrics are declared, and its example's primary
    metrics checked, here — an undeclared metric fails at import, not in every run."""
    declare_tools(workload.tools, f"{workload.name} workloads")
    declare_metrics(workload.name, workload.metrics)
    token = _REGISTERING.set(True)
    try:
        example = workload.validate(dict(workload.example))
    finally:
        _REGISTERING.reset(token)
    check_declared(f"workload {workload.name!r}", workload.primary_metrics(example))
    return WORKLOADS.register(workload.name, workload)
