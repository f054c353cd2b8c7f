"""The identity of a study, and what changed between a stored study and its file now.

A study is its file's text, quick mode and the texts of the files its workloads read (a
fio job file and its includes): ``study_digest``. --resume continues only a study of the
same identity; what differs is said in words (``what_changed``), down to the fields
(``spec_changes``). --retry-failed may adopt a changed file when the change touches only
what made runs fail (``retry_plan``): every cell with a stored result keeps its
definition; the cells whose runs all failed may change (a timeout, a memory limit) and
are measured again under the new definition, both definitions kept with the study.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .jobdata.model import Cell


def input_digests(cells: Iterable[Cell]) -> dict[str, str]:
    """Each input file the study's workloads read, by '<workload case>: <name>', with the
    SHA-256 of its text."""
    out: dict[str, str] = {}
    for cell in cells:
        for name, text in cell.inputs.items():
            out[f"{cell.label}: {name}"] = hashlib.sha256(text.encode()).hexdigest()
    return dict(sorted(out.items()))


def study_digest(text: str, quick: bool, cells: Iterable[Cell]) -> str:
    """The identity of a study. One without input files keeps the digest it always had."""
    inputs = input_digests(cells)
    extra = f"\n#inputs={json.dumps(inputs, sort_keys=True)}" if inputs else ""
    return hashlib.sha256((text + f"\n#quick={quick}" + extra).encode()).hexdigest()


def _flatten(value: Any, path: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(_flatten(inner, f"{path}.{key}" if path else str(key)))
        return out
    if isinstance(value, list) and any(isinstance(v, dict) for v in value):
        out = {}
        for i, inner in enumerate(value):
            out.update(_flatten(inner, f"{path}[{i}]"))
        return out
    return {path: value}


def spec_changes(old_text: str, new_text: str) -> list[str]:
    """The fields of a study file that differ, as 'workloads[0].timeout: 10 -> 60'; the
    whole file when either side is not TOML."""
    try:
        old, new = _flatten(tomllib.loads(old_text)), _flatten(tomllib.loads(new_text))
    except tomllib.TOMLDecodeError:
        return ["the study file"] if old_text != new_text else []
    out = []
    for key in sorted(set(old) | set(new)):
        if old.get(key, _ABSENT) != new.get(key, _ABSENT):
            out.append(f"{key}: {_shown(old.get(key, _ABSENT))} -> {_shown(new.get(key, _ABSENT))}")
    return out


_ABSENT = object()


def _shown(value: Any) -> str:
    return "(absent)" if value is _ABSENT else json.dumps(value, default=str)


def what_changed(stored_text: str, stored_inputs: Mapping[str, str], text: str,
                 inputs: Mapping[str, str]) -> list[str]:
    """What differs between a stored study and the one asked for now, in words."""
    out = [f"the study file ({'; '.join(spec_changes(stored_text, text)) or 'its text'})"] \
        if stored_text != text else []
    for name in sorted(set(stored_inputs) | set(inputs)):
        if name not in inputs:
            out.append(f"{name} (no longer read)")
        elif name not in stored_inputs:
            out.append(f"{name} (new)")
        elif stored_inputs[name] != inputs[name]:
            out.append(name)
    return out


@dataclass(frozen=True)
class RetryPlan:
    """How --retry-failed adopts a changed study: the new cells that replace stored ones
    whose runs all failed (old id -> new cell), or why it cannot."""

    replaced: dict[str, Cell]
    refusal: str | None


def case_key(filesystem: str, workload: str, axes: Mapping[str, Any]) -> tuple[str, str, str]:
    """A file-system entry's case of a workload (its axis values): the same whatever id
    its cell has, so a stored cell and one planned now can be matched."""
    return filesystem, workload, json.dumps(axes, sort_keys=True, default=str)


def retry_plan(stored_cells: Sequence[Mapping[str, Any]], ok_cells: set[str], cells: Iterable[Cell]) -> RetryPlan:
    """Whether the cells planned now may take the place of the stored ones: the same
    cases (file system, workload and axis values), and every case with a stored result
    unchanged."""
    stored = {case_key(c["filesystem"], c["workload"], c["axes"]): c for c in stored_cells}
    replaced: dict[str, Cell] = {}
    problems: list[str] = []
    for cell in cells:
        before = stored.pop(case_key(cell.filesystem, cell.workload, cell.axes), None)
        if before is None:
            problems.append(f"{cell.filesystem} {cell.label} is a new case")
        elif before["id"] != cell.id:
            if before["id"] in ok_cells:
                problems.append(f"{cell.filesystem} {cell.label} has stored results and a new definition")
            else:
                replaced[str(before["id"])] = cell
    problems += [f"{c['filesystem']} {c['workload']} is no longer in the study" for c in stored.values()]
    refusal = None
    if problems:
        refusal = ("a retry would mix two definitions of one case (" + "; ".join(problems) + ")")
    return RetryPlan(replaced, refusal)
