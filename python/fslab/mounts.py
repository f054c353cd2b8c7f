"""The kernel's mount table, read in one place. /proc/mounts escapes space, tab, newline
and backslash in paths as octal (\\040 ...) and shows canonical paths, so callers compare
``Path.resolve()``d paths with the decoded entries."""

from __future__ import annotations

import re
from pathlib import Path

from .datarecords import datarecord

_OCTAL = re.compile(r"\\([0-7]{3})")


def _decode(field: str) -> str:
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field)


@datarecord(frozen=True)
class MountEntry:
    """One line of /proc/mounts, decoded."""

    source: str
    target: Path
    fs_type: str
    options: str


def mount_table() -> list[MountEntry]:
    entries = []
    for line in Path("/proc/mounts").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 4:
            entries.append(MountEntry(_decode(parts[0]), Path(_decode(parts[1])), parts[2], parts[3]))
    return entries


def mount_at(path: Path) -> MountEntry | None:
    """The mount whose mount point is exactly ``path`` (the last one, if stacked)."""
    target = path.resolve()
    found = None
    for entry in mount_table():
        if entry.target == target:
            found = entry
    return found


def mounts_of_source(source: str) -> list[MountEntry]:
    return [e for e in mount_table() if e.source == source]


def filesystem_holding(path: Path) -> MountEntry | None:
    """The mount a path lives on (the longest mount point that contains it)."""
    target = path.resolve()
    best: MountEntry | None = None
    for entry in mount_table():
        if target == entry.target or entry.target in target.parents:
            if best is None or len(str(entry.target)) >= len(str(best.target)):
                best = entry
    return best
