"""Devices a file system is made on. Each kind is a registry entry whose ``provision``
is a context manager: it yields a DeviceHandle and always releases the device.

A kind's ``[device]`` section is a pydantic model in fslab.devices.sections, loaded only
where a study's sections are checked (planning, preflight); a job reads its section,
checked when it was planned, as plain data (``DeviceKind.from_job``), so the modules of
this package load without pydantic."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..commands import declare_tools
from ..datarecords import datarecord, field
from ..errors import FslabError
from ..jobdata.model import NO_GRANT as NO_GRANT
from ..jobdata.model import Grant as Grant
from ..kernel_log import kernel_names
from ..registry import Registry

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..spec import DeviceSection


@datarecord(frozen=True)
class DeviceHandle:
    """A block device ready for mkfs. ``sysfs_name`` is its name under /sys/class/block."""

    path: str
    sysfs_name: str
    major: int
    minor: int
    facts: dict[str, Any] = field(default_factory=dict)
    # An md array's member devices (traced apart from the array: job.tracing).
    members: tuple[DeviceHandle, ...] = ()
    # A bio-based mapping with one device below it (dm-delay): the kernel makes requests
    # only there, so a block trace and its counters are taken of that device.
    requests_on: DeviceHandle | None = None

    @property
    def dev_t(self) -> int:
        """The kernel's internal dev_t (major << 20 | minor), as tracepoints print it."""
        return (self.major << 20) | self.minor

    def kernel_names(self) -> set[str]:
        """The kernel's names of this device, the devices below it (dm and md slaves)
        and its members, as its I/O error lines name them (fslab.kernel_log)."""
        names: set[str] = set()
        for handle in (self, self.requests_on, *self.members):
            if handle is not None and handle.sysfs_name:
                names |= kernel_names(handle.sysfs_name)
        return names

    def read_stat(self) -> dict[str, int]:
        """/sys/class/block/DEV/stat counters (see Documentation/block/stat.rst); all zero for
        a device with no block device behind it (the fake device); a mapping's are those of
        the device its requests go to (``requests_on``), so they match its trace."""
        if self.requests_on is not None:
            return self.requests_on.read_stat()
        if not self.sysfs_name:
            return dict.fromkeys(STAT_FIELDS, 0)
        return read_block_stat(self.sysfs_name)


STAT_FIELDS = (
    "read_ios", "read_merges", "read_sectors", "read_ticks",
    "write_ios", "write_merges", "write_sectors", "write_ticks",
    "in_flight", "io_ticks", "time_in_queue",
    "discard_ios", "discard_merges", "discard_sectors", "discard_ticks",
    "flush_ios", "flush_ticks",
)


def read_block_stat(sysfs_name: str) -> dict[str, int]:
    """The device's counters; a partition's without the flush fields, which the kernel
    counts on the whole disk only (a partition's are always 0)."""
    # /sys/class/block has partitions too (/sys/block lists whole disks only).
    device = Path(f"/sys/class/block/{sysfs_name}")
    stats = {name: int(v) for name, v in zip(STAT_FIELDS, (device / "stat").read_text().split())}
    if (device / "partition").exists():
        stats.pop("flush_ios", None)
        stats.pop("flush_ticks", None)
    return stats


def handle_for(path: str, facts: dict[str, Any] | None = None) -> DeviceHandle:
    st = os.stat(path)
    if not stat.S_ISBLK(st.st_mode):
        raise ValueError(f"{path} is not a block device")
    major, minor = os.major(st.st_rdev), os.minor(st.st_rdev)
    sysfs = Path(f"/sys/dev/block/{major}:{minor}").resolve().name
    return DeviceHandle(path, sysfs, major, minor, facts or {})


def whole_disk_of(sysfs_name: str) -> str | None:
    """The whole disk a partition belongs to (its /sys/block name), or None for a whole disk."""
    real = Path(f"/sys/class/block/{sysfs_name}").resolve()
    return real.parent.name if (real / "partition").exists() else None


def untraceable_partition(handle: DeviceHandle) -> str | None:
    """Why the block layer's request events cannot be traced on the device alone, or None:
    a partition's requests are made on its whole disk and carry the disk's device number."""
    disk = whole_disk_of(handle.sysfs_name)
    if disk is None:
        return None
    return (f"{handle.path} is a partition of /dev/{disk}: the kernel makes its requests on the whole disk, "
            f"whose events carry the disk's number, so a trace of {handle.path} alone would hold none of them")


def queue_facts(sysfs_name: str) -> dict[str, Any]:
    """Facts about a device's request queue, recorded in provenance."""
    # A partition has no queue of its own: its requests are queued on its whole disk.
    queue = Path(f"/sys/block/{whole_disk_of(sysfs_name) or sysfs_name}/queue")
    facts: dict[str, Any] = {}
    for name in ("logical_block_size", "physical_block_size", "rotational", "scheduler",
                 "nr_requests", "max_sectors_kb", "write_cache", "fua"):
        try:
            facts[name] = (queue / name).read_text().strip()
        except OSError:
            pass
    try:
        facts["size_bytes"] = int(Path(f"/sys/class/block/{sysfs_name}/size").read_text()) * 512
    except OSError:
        pass
    return facts




@datarecord(frozen=True)
class HostProbe:
    """What this host's kernel offers a device kind that otherwise needs a guest:
    whether the device can be made here, and what was found (said by `fslab plan`)."""

    available: bool
    finding: str


@datarecord(frozen=True)
class DeviceKind:
    """A device family, one module each.

    ``section_name``: the pydantic model of its fields in ``[device]`` (besides ``kind``),
    a class of fslab.devices.sections (``section`` loads it).
    ``provision(section, workdir, tag, grant)``: a context manager yielding a handle and
    always releasing the device. ``preflight(section, grant, resuming)``: once per study,
    before any mkfs; returns the identities of the user's disks it names, keyed by disk
    path (or None), for the jobs to carry.
    Capabilities: ``needs_root``, ``traceable`` (has a dev_t the block tracepoints see),
    ``tools`` (executable -> Debian package), ``image_file`` (its section has ``size`` and
    ``image_dir`` and the device is a loop-attached image file, so a job may start from a
    copy of a prepared image: aged images, fslab.aged_images).
    """

    name: str
    section_name: str
    provision: Callable[[Any, Path, str, Grant], AbstractContextManager[DeviceHandle]]
    preflight: Callable[[Any, Grant, bool], dict[str, str] | None] | None = None
    needs_root: bool = True
    traceable: bool = True
    image_file: bool = False
    tools: dict[str, str] = field(default_factory=dict)
    description: str = ""
    # A guest provides it (md RAID, emulated devices: modules a host kernel may lack)...
    needs_guest: bool = False
    # ...unless this probe finds that this host's kernel can make the section's device
    # (md and the RAID level's personality). None: only a guest can.
    host_probe: Callable[[Any], HostProbe] | None = None
    # Under the guest backend: the virtio disks (bytes each) the backend makes for it on
    # the host, and the [device] section the job uses inside the guest. None: the kind
    # cannot run in a guest (a host's own block device).
    guest_disks: Callable[[Any], list[int]] | None = None
    guest_section: Callable[[Any], dict[str, Any]] | None = None
    # Under the guest backend: the host's block devices handed to the guest as raw virtio
    # disks (before any image of guest_disks), checked again right before the guest
    # starts (the same checks as on the host); raises DeviceRefused. None: none.
    guest_passthrough: Callable[[Any, Grant], list[str]] | None = None
    # The user's own disks a section names (each checked once per study by ``preflight``;
    # one device section per disk, fslab.study). None: none.
    user_disks: Callable[[Any], list[str]] | None = None
    # Bytes a file system on it can use at most, known before anything is made (a
    # section's size, an array's data disks, a handed-over disk's size). None: unknown.
    capacity: Callable[[Any], int | None] | None = None

    @property
    def section(self) -> type[BaseModel]:
        """The model of this kind's section (loads pydantic)."""
        from . import sections

        model: type[BaseModel] = getattr(sections, self.section_name)
        return model

    def parse(self, section: DeviceSection | dict[str, Any]) -> Any:
        """The typed section of this kind (raises pydantic's ValidationError)."""
        data = {k: v for k, v in section.items() if k != "kind"} if isinstance(section, dict) else section.params
        return self.section.model_validate(data)

    def from_job(self, data: dict[str, Any]) -> SectionData:
        """A job's section (``JobSettings.device``): checked by ``parse`` when the study
        was planned and written with every field, so read as it is."""
        return SectionData(self.name, {k: v for k, v in data.items() if k != "kind"})


class SectionData:
    """A device section as a job carries it: its fields as attributes, read-only. A
    field the job lacks is an FslabError naming it (a job written by another fslab)."""

    __slots__ = ("_kind", "_fields")

    def __init__(self, kind: str, fields: dict[str, Any]):
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_fields", dict(fields))

    def __getattr__(self, name: str) -> Any:
        try:
            return self._fields[name]
        except KeyError:
            raise FslabError(f"the job's device section (kind = {self._kind!r}) has no field {name!r}: "
                             "the job was written by another version of fslab; plan the study again") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a job's device section is read-only ({name})")

    def __repr__(self) -> str:
        return f"SectionData({self._kind!r}, {self._fields!r})"


# Each kind is the module of its name, loaded when first asked for (a job loads its own).
DEVICES: Registry[DeviceKind] = Registry("device kind", __name__)


def capacity_of(section: DeviceSection) -> int | None:
    """The bytes a device of this section offers, as far as planning can tell."""
    kind = DEVICES.get(section.kind)
    return kind.capacity(kind.parse(section)) if kind.capacity is not None else None


def disk_bytes(path: str) -> int | None:
    """A block device's size from sysfs (readable without root); None when not there."""
    try:
        name = Path(os.path.realpath(path)).name
        return int(Path(f"/sys/class/block/{name}/size").read_text()) * 512
    except (OSError, ValueError):
        return None


def register_device_kind(kind: DeviceKind) -> DeviceKind:
    declare_tools(kind.tools, f"{kind.name} devices")
    return DEVICES.register(kind.name, kind)
