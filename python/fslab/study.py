"""Reading a study file: TOML parsed in one place, the schema checked (``spec.py``), then
each plug-in's own fields (device kind, file systems, workloads, device models), every
error naming the file, the field, what was given and what is allowed."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from .errors import SpecError
from .spec import StudySpec
from .units import given_text


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


def _describe(error: ErrorDetails) -> str:
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        message = "is not a known field (check its spelling; docs/study-file.md lists every field)"
    elif error["type"] == "missing":
        message = "is required but missing"
    given = error.get("input")
    if error["type"] not in ("missing", "extra_forbidden") and not isinstance(given, dict):
        message += f" (given: {given_text(given)})"
    return message


def field_description(model: type[BaseModel], loc: tuple[int | str, ...]) -> str | None:
    """The description of the field at ``loc`` (through sections, tables of sections and
    lists of them), so an error says what the field means, not only pydantic's rule."""
    description = None
    current: Any = model
    table_key = False
    for part in loc:
        if isinstance(part, int) or table_key or not (isinstance(current, type) and issubclass(current, BaseModel)):
            table_key = False
            continue
        info = current.model_fields.get(str(part))
        if info is None:
            return None  # an extra field
        description = info.description
        table_key = get_origin(info.annotation) is dict  # the next part is a name (a file system's)
        current = next((a for a in (info.annotation, *get_args(info.annotation))
                        if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if current is None:  # dict[str, Section] / list[Section]: the section is an argument
            nested = [a for arg in get_args(info.annotation) for a in (arg, *get_args(arg))]
            current = next((a for a in nested if isinstance(a, type) and issubclass(a, BaseModel)), None)
    return description


def validation_lines(exc: ValidationError, prefix: str = "", model: type[BaseModel] | None = None) -> list[str]:
    """One line per invalid field, each with its path in the study file (and, given the
    model validated, what the field means)."""
    lines = []
    errors = exc.errors()
    for e in errors:
        if _other_branch_said_it(e, errors):
            continue
        path = ".".join(p for p in (prefix, _loc_to_path(e["loc"])) if p)
        line = f"{path or '(top level)'}: {_describe(e)}"
        meaning = field_description(model, tuple(e["loc"])) if model is not None else None
        if meaning and e["type"] != "extra_forbidden":
            line += f" [the field: {meaning}]"
        lines.append(line)
    return lines


def _other_branch_said_it(error: ErrorDetails, errors: list[ErrorDetails]) -> bool:
    """A union's literal branch that failed beside an error inside another branch's value (a
    workload's ``aging`` table with a bad fill, not also "Input should be 'none'"): the
    value was meant for that branch, and its error says why."""
    loc = tuple(error["loc"])
    at = next((i for i, part in enumerate(loc) if str(part).startswith("literal[")), None)
    # another branch's error: inside its value, or its model's own check (function-after[..., Model])
    return at is not None and any(other is not error and tuple(other["loc"])[:at] == loc[:at]
                                  and any(not str(p).startswith("function-") or str(p).startswith("function-after[")
                                          for p in other["loc"][at:])
                                  and not any(str(p).startswith("literal[") for p in other["loc"][at:])
                                  for other in errors)


def _invalid(lines: list[str], source: str) -> SpecError:
    return SpecError("invalid study file:\n  " + "\n  ".join(lines), source=source)


def _validate_device(spec: StudySpec, source: str) -> None:
    from .devices import DEVICES

    sections = [("device", spec.device)] + [(f"filesystems.{name}.device", fs.device)
                                            for name, fs in spec.filesystems.items() if fs.device is not None]
    for where, device in sections:
        if device.kind not in DEVICES:
            raise SpecError(f"unknown device kind {device.kind!r}; known: {', '.join(DEVICES.names())}",
                            source=source, field=f"{where}.kind")
        kind = DEVICES.get(device.kind)
        try:
            kind.parse(device)
        except ValidationError as exc:
            raise _invalid(validation_lines(exc, where, kind.section), source) from None
    from .named_disks import check_disks_named_once

    check_disks_named_once(spec, source)


def parse_spec(data: dict[str, Any], source: str, *, allow_exec: bool = False) -> StudySpec:
    """Validate a parsed study file. Raises SpecError naming every invalid field. Workload
    options that run programs (fio's exec_prerun, ...) are refused unless ``allow_exec``."""
    try:
        spec = StudySpec.model_validate(data)
    except ValidationError as exc:
        raise _invalid(validation_lines(exc, model=StudySpec), source) from None
    _validate_device(spec, source)
    from .workloads import WORKLOADS, checked_param_sets, validate_workload

    # Every workload's parameter sets checked by its tool at once where it can (fio), then
    # each workload alone, so that an error names its field.
    for kind in dict.fromkeys(w.kind for w in spec.workloads if w.kind in WORKLOADS):
        WORKLOADS.get(kind).prevalidate([p for w in spec.workloads if w.kind == kind for p in checked_param_sets(w)])
    for index, workload in enumerate(spec.workloads):
        validate_workload(workload, source=source, field=f"workloads[{index}]", allow_exec=allow_exec)
    from .filesystems import validate_filesystems

    validate_filesystems(spec, source=source)
    from .predictions import validate_simulate

    validate_simulate(spec, source=source)
    from .paper_check import validate_paper

    validate_paper(spec, source=source)
    return spec


def preset_names() -> list[str]:
    folder = resources.files("fslab") / "presets"
    return sorted(p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml"))


def resolve_study_path(study: str) -> tuple[str, str]:
    """Return (source label, TOML text) for a file path or a preset name."""
    path = Path(study)
    if path.is_file():
        try:
            return str(path), path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise SpecError(f"cannot read the study file: {exc}", source=str(path)) from None
    preset = resources.files("fslab") / "presets" / f"{study}.toml"
    if preset.is_file():
        return f"preset {study}", preset.read_text()
    raise SpecError(
        f"no study file or preset named {study!r}; presets: {', '.join(preset_names())}",
        source=study,
    )


def load_spec(study: str, *, allow_exec: bool = False) -> tuple[StudySpec, str, str]:
    """Read and validate a study file or preset. Returns (spec, source label, raw text)."""
    source, text = resolve_study_path(study)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"not valid TOML: {exc}", source=source) from None
    return parse_spec(data, source, allow_exec=allow_exec), source, text
