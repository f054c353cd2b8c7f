"""Devices a file system is made on. Each kind is a registry entry whose ``provision``
is a context manager: it yields a DeviceHandle and always releases the device."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..registry import Registry
from ..spec import DeviceSection


@dataclass(frozen=True)
class DeviceHandle:
    """A block device ready for mkfs. ``sysfs_name`` is its name under /sys/block."""

    path: str
    sysfs_name: str
    major: int
    minor: int
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def dev_t(self) -> int:
        """The kernel's internal dev_t (major << 20 | minor), as tracepoints print it."""
        return (self.major << 20) | self.minor

    def read_stat(self) -> dict[str, int]:
        """/sys/block/DEV/stat counters (see Documentation/block/stat.rst)."""
        return read_block_stat(self.sysfs_name)


STAT_FIELDS = (
    "read_ios", "read_merges", "read_sectors", "read_ticks",
    "write_ios", "write_merges", "write_sectors", "write_ticks",
    "in_flight", "io_ticks", "time_in_queue",
    "discard_ios", "discard_merges", "discard_sectors", "discard_ticks",
    "flush_ios", "flush_ticks",
)


def read_block_stat(sysfs_name: str) -> dict[str, int]:
    values = Path(f"/sys/block/{sysfs_name}/stat").read_text().split()
    return {name: int(v) for name, v in zip(STAT_FIELDS, values)}


def handle_for(path: str, facts: dict[str, Any] | None = None) -> DeviceHandle:
    st = os.stat(path)
    if not stat.S_ISBLK(st.st_mode):
        raise ValueError(f"{path} is not a block device")
    major, minor = os.major(st.st_rdev), os.minor(st.st_rdev)
    sysfs = Path(f"/sys/dev/block/{major}:{minor}").resolve().name
    return DeviceHandle(path, sysfs, major, minor, facts or {})


def queue_facts(sysfs_name: str) -> dict[str, Any]:
    """Facts about a device's request queue, recorded in provenance."""
    queue = Path(f"/sys/block/{sysfs_name}/queue")
    facts: dict[str, Any] = {}
    for name in ("logical_block_size", "physical_block_size", "rotational", "scheduler",
                 "nr_requests", "max_sectors_kb", "write_cache", "fua"):
        try:
            facts[name] = (queue / name).read_text().strip()
        except OSError:
            pass
    try:
        facts["size_bytes"] = int(Path(f"/sys/block/{sysfs_name}/size").read_text()) * 512
    except OSError:
        pass
    return facts


@dataclass(frozen=True)
class DeviceKind:
    """A device family. ``provision(section, workdir, tag, allowed)`` yields a handle."""

    name: str
    provision: Callable[[DeviceSection, Path, str, frozenset[str]], AbstractContextManager[DeviceHandle]]
    # preflight(section, allowed, workdir, resuming): once per study, before any mkfs
    preflight: Callable[[DeviceSection, frozenset[str], Path, bool], None] | None = None
    needs_guest: bool = False
    description: str = ""


DEVICES: Registry[DeviceKind] = Registry("device kind")


def _register_builtin() -> None:
    from . import block, image

    DEVICES.register("image", DeviceKind("image", image.provision, description=image.__doc__ or ""))
    DEVICES.register(
        "block",
        DeviceKind("block", block.provision, block.preflight, description=block.__doc__ or ""),
    )


_register_builtin()
