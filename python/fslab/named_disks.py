"""The user's own disks a study names, each by one device only.

Any file-system entry may run on a device on the user's disks: the study's ``[device]``
or its own ``[filesystems.NAME.device]`` (``kind = "block"``, or ``kind = "raid"`` with
``members``), so one study holds one SSD, RAID0 of eight and RAID5 of eight on real
drives and ranks them together. Each disk is confirmed once (``--destroy-data-on``) and
checked before the first mkfs (fslab.preflight.device_identity).

The rule, checked when the study file is read (so `fslab plan` refuses it too): a disk
belongs to one device. Entries whose device sections are alike (the same kind and
fields) share that device, as entries on ``[device]`` do: their jobs use it one at a
time, because fslab runs one job per machine at a time (the local executor in sequence,
a Dask worker one job at once). Two different sections naming one disk — a disk that is
also an array's member, a member of two arrays, a disk and one of its partitions — are
refused, naming both fields: each would destroy the other's layout, and nothing could
keep their jobs from following each other on it. Sections for different machine classes
name disks of different machines and are not compared.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from .errors import SpecError
from .spec import DeviceSection, StudySpec


@dataclass(frozen=True)
class NamedDisk:
    field: str  # where the study file names it, e.g. "filesystems.ssd.device.path"
    path: str
    device: str  # the naming section's fields: alike sections are one device
    machine_class: str | None  # the workers that have the disk (None: any, or this machine)


def named_disks(spec: StudySpec) -> list[NamedDisk]:
    """Every disk of the user's that a device in use names, with the field naming it."""
    from .devices import DEVICES

    sections: dict[str, DeviceSection] = {}
    for name, entry in spec.filesystems.items():
        sections.setdefault(f"filesystems.{name}.device" if entry.device is not None else "device",
                            spec.device_of(name))
    found: list[NamedDisk] = []
    for where, device in sections.items():
        kind = DEVICES.get(device.kind)
        if kind.user_disks is None:
            continue
        parsed = kind.parse(device)
        alike = repr(sorted(device.model_dump(exclude={"machine_class"}).items(), key=str))
        machine = device.machine_class or spec.study.machine_class
        found += [NamedDisk(_field_naming(parsed, where, path), path, alike, machine)
                  for path in kind.user_disks(parsed)]
    return found


def check_disks_named_once(spec: StudySpec, source: str) -> None:
    """Raise SpecError when two different device sections name one disk (or a disk and
    its partition); the error names both fields."""
    disks = named_disks(spec)
    for i, first in enumerate(disks):
        for second in disks[i + 1:]:
            if first.device == second.device or first.machine_class != second.machine_class:
                continue  # one device shared by entries (its own fields are its plug-in's to check)
            if _overlap(first.path, second.path):
                same = "name the same disk" if os.path.realpath(first.path) == os.path.realpath(second.path) \
                    else "name a disk and one of its partitions"
                raise SpecError(
                    f"{first.field} ({first.path}) and {second.field} ({second.path}) {same}: a disk belongs "
                    "to one device of a study. Give each device its own disks, or let the entries share one "
                    "device (the study's [device], or alike device tables: their jobs then use it one at a time)",
                    source=source, field=second.field)


def _field_naming(section: BaseModel, where: str, path: str) -> str:
    """The field of ``section`` that holds ``path``: ``where.path`` or ``where.members[2]``."""
    for name in type(section).model_fields:
        value = getattr(section, name)
        if value == path:
            return f"{where}.{name}"
        if isinstance(value, list) and path in value:
            return f"{where}.{name}[{value.index(path)}]"
    return where


def _overlap(a: str, b: str) -> bool:
    """The same disk (by the paths' targets: /dev/disk/by-id links too) or, where this
    machine has them, a disk and one of its partitions (by the kernel's names)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    first, second = _kernel_names(a), _kernel_names(b)
    if first is None or second is None:
        return False
    return first[0] == second[0] or first[1] == second[0] or second[1] == first[0]


def _kernel_names(path: str) -> tuple[str, str | None] | None:
    """The block device's name under /sys/class/block and its whole disk's when it is a
    partition; None when the path is not a block device here."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISBLK(st.st_mode):
        return None
    real = Path(f"/sys/dev/block/{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}").resolve()
    return real.name, real.parent.name if (real / "partition").exists() else None
