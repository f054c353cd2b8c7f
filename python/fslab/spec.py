"""Study files: the schema (pydantic), reading TOML in one place, and errors that name the
file, the field, what was given and what is allowed.

A study file has four parts: ``[study]`` (name, repetitions, order, ...), ``[device]``,
``[filesystems.NAME]`` (one section per file-system configuration) and ``[[workloads]]``
(each with optional ``[workloads.axes]``). Expansion into cells lives in ``plan.py``.
"""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import SpecError
from .units import parse_duration_s, parse_size


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StudySection(_Strict):
    name: str = Field(min_length=1)
    description: str = ""
    repetitions: int = Field(default=3, ge=1, le=1000)
    order: Literal["shuffled", "in-order"] = "shuffled"
    seed: int | None = Field(default=None, description="order seed; drawn and recorded if absent")
    backend: Literal["auto", "host", "guest"] = "auto"
    fresh: Literal["run", "repetition"] = "run"
    trace: bool = False
    simulate: list[str] = Field(default_factory=list)
    drop_caches: bool = True


class DeviceSection(_Strict):
    kind: Literal["image", "block"] = "image"
    size: int = Field(default=4 << 30, description="bytes; image devices only")
    path: str | None = Field(default=None, description="block devices: the device node")
    image_dir: str | None = Field(default=None, description="where image files go")
    force: bool = Field(default=False, description="block devices: allow one with a signature")

    @field_validator("size", mode="before")
    @classmethod
    def _size(cls, value: Any) -> int:
        return parse_size(value)

    @model_validator(mode="after")
    def _check(self) -> DeviceSection:
        if self.kind == "block" and not self.path:
            raise ValueError("kind = 'block' needs path = '/dev/...' naming the device to use")
        if self.kind == "image" and self.path:
            raise ValueError("path is for kind = 'block'; an image device makes its own file")
        if self.kind == "image" and self.size < 64 << 20:
            raise ValueError("an image device needs at least 64MiB (btrfs and xfs refuse less)")
        return self


class FilesystemSection(_Strict):
    type: str | None = Field(default=None, description="FS type when the section name is a label")
    mkfs: list[str] = Field(default_factory=list, description="extra mkfs arguments")
    mount: list[str] = Field(default_factory=list, description="mount options, e.g. ['noatime']")


class WorkloadSection(BaseModel):
    """A workload: ``kind`` picks the plug-in, which validates the remaining parameters."""

    model_config = ConfigDict(extra="allow", frozen=True)

    kind: str
    name: str = Field(min_length=1)
    axes: dict[str, list[Any]] = Field(default_factory=dict)
    zip: list[list[str]] = Field(
        default_factory=list, description="groups of axes that vary together instead of crossed"
    )
    memory: int | None = Field(default=None, description="memory-cgroup limit for the workload")
    timeout: float | None = Field(default=None, description="seconds before the run is killed")

    @field_validator("memory", mode="before")
    @classmethod
    def _memory(cls, value: Any) -> int | None:
        return None if value is None else parse_size(value)

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout(cls, value: Any) -> float | None:
        return None if value is None else parse_duration_s(value)

    @field_validator("axes")
    @classmethod
    def _axes(cls, axes: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for key, values in axes.items():
            if not values:
                raise ValueError(f"axis {key!r} has no values; give at least one")
            if len({repr(v) for v in values}) != len(values):
                raise ValueError(f"axis {key!r} repeats a value: {values}")
        return axes

    @model_validator(mode="after")
    def _zips(self) -> WorkloadSection:
        seen: set[str] = set()
        for group in self.zip:
            for axis in group:
                if axis not in self.axes:
                    raise ValueError(f"zip names {axis!r}, which is not in axes ({sorted(self.axes)})")
                if axis in seen:
                    raise ValueError(f"axis {axis!r} is in two zip groups")
                seen.add(axis)
            lengths = {len(self.axes[a]) for a in group}
            if len(lengths) > 1:
                raise ValueError(f"zipped axes {group} must have equally many values")
        return self

    @property
    def params(self) -> dict[str, Any]:
        """The workload's own parameters (everything but the common fields)."""
        return dict(self.model_extra or {})


class StudySpec(_Strict):
    study: StudySection
    device: DeviceSection = Field(default_factory=DeviceSection)
    filesystems: dict[str, FilesystemSection] = Field(min_length=1)
    workloads: list[WorkloadSection] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_workload_names(self) -> StudySpec:
        names = [w.name for w in self.workloads]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"workload names must be unique; repeated: {dupes}")
        return self


def _loc_to_path(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part in ("function-after", "function-before") or str(part).startswith("function-"):
            continue
        else:
            path += ("." if path else "") + str(part)
    return path


def _describe(error: dict[str, Any]) -> str:
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        message = "is not a known field (check its spelling; `fslab plan --help` shows the format)"
    elif error["type"] == "missing":
        message = "is required but missing"
    given = error.get("input")
    if error["type"] not in ("missing", "extra_forbidden") and not isinstance(given, dict):
        message += f" (given: {given!r})"
    return message


def parse_spec(data: dict[str, Any], source: str) -> StudySpec:
    """Validate a parsed study file. Raises SpecError naming every invalid field."""
    try:
        spec = StudySpec.model_validate(data)
    except ValidationError as exc:
        lines = [f"{_loc_to_path(e['loc']) or '(top level)'}: {_describe(e)}" for e in exc.errors()]
        raise SpecError(
            "invalid study file:\n  " + "\n  ".join(lines), source=source
        ) from None
    # Workload parameters are validated by their plug-ins (imported late: they import us).
    from .workloads import validate_workload

    for index, workload in enumerate(spec.workloads):
        validate_workload(workload, source=source, field=f"workloads[{index}]")
    from .filesystems import validate_filesystems

    validate_filesystems(spec, source=source)
    from .predictions import validate_simulate

    validate_simulate(spec, source=source)
    return spec


def preset_names() -> list[str]:
    folder = resources.files("fslab") / "presets"
    return sorted(p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml"))


def resolve_study_path(study: str) -> tuple[str, str]:
    """Return (source label, TOML text) for a file path or a preset name."""
    path = Path(study)
    if path.is_file():
        return str(path), path.read_text()
    preset = resources.files("fslab") / "presets" / f"{study}.toml"
    if preset.is_file():
        return f"preset {study}", preset.read_text()
    raise SpecError(
        f"no study file or preset named {study!r}; presets: {', '.join(preset_names())}",
        source=study,
    )


def load_spec(study: str) -> tuple[StudySpec, str, str]:
    """Read and validate a study file or preset. Returns (spec, source label, raw text)."""
    source, text = resolve_study_path(study)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"not valid TOML: {exc}", source=source) from None
    return parse_spec(data, source), source, text
