"""Workloads: one module each, registered here. A workload turns a cell's parameters into
a real tool run on a mounted file system and returns metrics with declared units.

Contract of an entry (see ``Workload``): ``validate`` normalises and checks parameters
(raising ParamError that names the parameter), ``quick`` scales them down for smoke
runs, ``prepare`` (optional) lays out files before counters and traces start, ``run``
executes in a RunContext and returns a WorkloadResult, or raises FslabError (the run is
then stored as failed, with the error and the tool's stderr kept).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..cgroups import MemoryLimit
from ..devices import DeviceHandle
from ..errors import SpecError
from ..registry import Registry
from ..spec import WorkloadSection


@dataclass(frozen=True)
class RunContext:
    """Everything a workload may use: where to work, where to leave files, limits."""

    workdir: Path  # an empty directory on the file system under test, this run's own
    device: DeviceHandle
    artifact_dir: Path
    timeout_s: float | None
    memory: MemoryLimit | None
    study_dir: Path  # where the study file lives, for relative job-file paths


@dataclass
class WorkloadResult:
    metrics: dict[str, float]
    tool_runtime_s: float  # the time the tool itself reports running (for overhead)
    info: dict[str, Any] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)  # metric -> why it has no number


class ParamError(ValueError):
    """A workload parameter is invalid; ``key`` names it so the spec can give its path."""

    def __init__(self, key: str, message: str):
        self.key = key
        super().__init__(message)


class Workload(Protocol):
    """``capabilities``: "traceable" (may run under a block trace), "memory_limit" (always
    runs in a memory cgroup), "direct_io", "job_file", "custom_report". ``tools``: the
    executables it runs, checked before a study starts."""

    name: str
    capabilities: frozenset[str]
    tools: tuple[str, ...]

    def validate(self, params: dict[str, Any]) -> dict[str, Any]: ...

    def quick(self, params: dict[str, Any]) -> dict[str, Any]: ...

    def primary_metrics(self, params: dict[str, Any]) -> list[str]: ...

    def tool_versions(self) -> dict[str, str | None]: ...

    def run(self, params: dict[str, Any], ctx: RunContext) -> WorkloadResult: ...

    # Optional: def prepare(self, params: dict[str, Any], ctx: RunContext) -> None


WORKLOADS: Registry[Workload] = Registry("workload kind")


def validate_workload(section: WorkloadSection, *, source: str, field: str) -> None:
    """Check a workload's parameters and every value of its axes with its plug-in."""
    if section.kind not in WORKLOADS:
        raise SpecError(
            f"unknown workload kind {section.kind!r}; known: {', '.join(WORKLOADS.names())}",
            source=source, field=f"{field}.kind",
        )
    workload = WORKLOADS.get(section.kind)
    # Parameters may be completed by axes (size from a layout axis, say), so check the
    # first combination whole, then every axis value within it.
    first = {axis: values[0] for axis, values in section.axes.items()}
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


def _register_builtin() -> None:
    from .bonnie import BonnieWorkload
    from .fio import FioWorkload
    from .mobibench import MobibenchWorkload

    WORKLOADS.register("fio", FioWorkload())
    WORKLOADS.register("bonnie", BonnieWorkload())
    WORKLOADS.register("mobibench", MobibenchWorkload())


_register_builtin()
