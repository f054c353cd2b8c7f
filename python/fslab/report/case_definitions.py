"""What defines a workload case, for `fslab compare`: two cases are comparable only when
they were defined alike, or differ only in the variable under test.

A case's definition (``definition``) is a flat mapping field -> text:

- ``workload_kind`` and every workload parameter by its own name (``direct``,
  ``ioengine``, ``runtime``, ``size``, ``ops``; a parameter one side lacks reads
  ``not set``), the text of each file the workload reads as ``inputs.NAME`` (its SHA-256),
  ``memory`` (the memory-cgroup limit), ``timeout`` and ``aging``;
- and, per side, what the case ran on: ``fs_type``, ``mkfs``, ``mount`` (as requested),
  ``backend``, ``kernel`` (the guest's), ``guest_memory`` and the file system's
  ``[device]`` section as ``device.FIELD`` (as written, sizes in bytes).

Field names are what ``--variable`` accepts; a name also covers its dotted sub-fields
(``device`` covers ``device.size``). ``host`` and ``kernel`` also name the provenance
facts of that name (the machine; the kernel release that ran), which never define a case
but can be named as the variable under test.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import FslabError
from ..stored import StoredCell
from ..units import parse_size
from .provenance_facts import bytes_text

NOT_SET = "not set"
# Fields of a cell beside its parameters, in the order differences are listed.
CELL_FIELDS = ("workload_kind", "memory", "timeout", "aging", "fs_type", "mkfs", "mount", "backend",
               "kernel", "guest_memory")
# Fields that name a provenance fact, not a definition: valid as --variable everywhere.
PROVENANCE_VARIABLES = ("host", "kernel")
# The variable a compare mode tests without being told (two file systems: the file system
# and its options; two hosts: the host; two studies: nothing unless named).
MODE_VARIABLES: dict[str, tuple[str, ...]] = {
    "studies": (),
    "file systems": ("fs_type", "mkfs", "mount"),
    "hosts": ("host",),
}
# Device-section fields that say where a device's files go, not what it is: a warning
# when they differ, never a reason to leave a case out.
DEVICE_PLACES = frozenset({"image_dir", "directory"})
# Provenance facts (report.provenance_facts) that a definition field stands for: when the
# field is the variable under test, the fact is too.
FACT_VARIABLE = {"host": "host", "kernel": "kernel", "backend": "backend", "file system type": "fs_type",
                 "mkfs command": "mkfs", "mount options requested": "mount", "mount options in effect": "mount"}


@dataclass(frozen=True)
class FieldDifference:
    """One defining field whose values differ between A's and B's case."""

    field: str
    a: str
    b: str

    def text(self) -> str:
        return f"{self.field} differs (A: {self.a}, B: {self.b})"


def _value_text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def device_sections(spec_text: str) -> dict[str, dict[str, str]]:
    """File-system entry -> its ``[device]`` section (its own, else the study's) as field
    -> text (``_section_text``); a study file that is not TOML gives no sections."""
    try:
        data = tomllib.loads(spec_text)
    except tomllib.TOMLDecodeError:
        return {}
    study_device = data.get("device") or {}
    out = {}
    for name, entry in (data.get("filesystems") or {}).items():
        own = entry.get("device") if isinstance(entry, dict) else None
        out[name] = _section_text(own if isinstance(own, dict) else study_device)
    return out


def _section_text(section: Mapping[str, Any]) -> dict[str, str]:
    """A [device] section as field -> text: as the study file wrote it, sizes in bytes.
    Its defaults are the device plug-in's, which a report must not load (report modules
    read stored results only), so a field written out on one side and left to its default
    on the other differs ('not set'): a case left out, never one paired wrongly."""
    fields = {k: v for k, v in section.items() if k not in ("kind", "machine_class")}  # placement: not the device
    return {"kind": str(section.get("kind", "image")), **{k: _device_value(v) for k, v in sorted(fields.items())}}


def _device_value(value: Any) -> str:
    """'512MiB' and 536870912 read alike: a text with a size unit as its bytes."""
    if isinstance(value, str) and _SIZE_WITH_UNIT.match(value):
        try:
            return str(parse_size(value))
        except ValueError:
            pass
    return _value_text(value)


_SIZE_WITH_UNIT = re.compile(r"^\s*\d+(\.\d+)?\s*[kKmMgGtT]i?[bB]?\s*$")


def definition(cell: StoredCell, device: Mapping[str, str]) -> dict[str, str]:
    """The case's defining fields as text (see the module docstring)."""
    memory = cell.get("memory_bytes")
    timeout = cell.get("timeout_s")
    guest_memory = cell.get("guest_memory")
    out = {
        "workload_kind": cell["workload_kind"],
        "memory": "no limit" if memory is None else bytes_text(memory),
        "timeout": "none" if timeout is None else f"{timeout:g} s",
        "aging": _value_text(cell.get("aging")),
        "fs_type": cell["fs_type"],
        "mkfs": " ".join(cell.get("mkfs") or []) or "none",
        "mount": ",".join(cell.get("mount") or []) or "defaults",
        "backend": cell["backend"],
        "kernel": cell.get("kernel") or ("the host's" if cell["backend"] == "host" else "default"),
        "guest_memory": "—" if guest_memory is None else bytes_text(guest_memory),
    }
    for name, value in sorted((cell.get("params") or {}).items()):
        out[name if name not in out else f"params.{name}"] = _value_text(value)  # never shadow a cell field
    for name, text in sorted((cell.get("inputs") or {}).items()):
        out[f"inputs.{name}"] = "SHA-256 " + hashlib.sha256(text.encode()).hexdigest()[:16]
    for key, value in device.items():
        if key not in DEVICE_PLACES:
            out[f"device.{key}"] = value
    return out


def differing(a: Mapping[str, str], b: Mapping[str, str]) -> list[FieldDifference]:
    """The fields whose values differ, cell fields first, then parameters and the rest in
    name order. A field one side lacks reads ``not set``."""
    order = [*CELL_FIELDS, *sorted((set(a) | set(b)) - set(CELL_FIELDS))]
    return [FieldDifference(f, a.get(f, NOT_SET), b.get(f, NOT_SET)) for f in order
            if a.get(f, NOT_SET) != b.get(f, NOT_SET)]


def covers(variable: str, field: str) -> bool:
    """Whether naming ``variable`` makes ``field`` the variable under test."""
    return field == variable or field.startswith(variable + ".")


def valid_variables(definitions: Iterable[Mapping[str, str]]) -> list[str]:
    """Every name --variable accepts for these cases: each defining field, the groups of
    dotted fields (``device``, ``inputs``) and the provenance variables."""
    names: set[str] = set(PROVENANCE_VARIABLES)
    for d in definitions:
        for field in d:
            names.add(field)
            if "." in field:
                names.add(field.split(".", 1)[0])
    return sorted(names)


def check_variables(variables: Iterable[str], valid: list[str]) -> None:
    """Raise FslabError naming the flag and the valid fields for a name that is none."""
    unknown = [v for v in variables if v not in valid]
    if unknown:
        raise FslabError(
            f"--variable {unknown[0]}: no field of that name defines the cases compared here. Valid fields: "
            f"{', '.join(valid)} (workload parameters by their own name; device.FIELD or device; inputs.NAME "
            "or inputs; host and kernel name the provenance facts)")


def fact_variable(fact: str) -> str | None:
    """The --variable name that covers a provenance fact (``device kind`` -> ``device``)."""
    if fact.startswith("device "):
        return "device"
    return FACT_VARIABLE.get(fact)
