"""A block device the user names. fslab refuses, unless told explicitly, any device that
is mounted, holds the root file system, is in use (held open exclusively, or has holders
such as md or dm) or carries a file-system or partition-table signature. A file system
only a guest has gets the disk whole, as a raw virtio disk (checked the same way on the
host right before the guest starts; the guest is given no other host disk). A partition
is counted on its own (its counters in /sys/class/block), but for what the kernel keeps
on its whole disk: its runs have no flush count, and the disk's I/O error lines count as
its own (its other partitions' included). On the host it cannot be traced alone, since
the kernel makes its requests on its whole disk under the disk's number, so a traced
study refuses it before anything is made and asks for the whole disk."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shlex
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..commands import run_command
from ..errors import DeviceRefused
from ..mounts import mount_table
from . import (
    NO_GRANT,
    DeviceHandle,
    DeviceKind,
    Grant,
    SectionData,
    disk_bytes,
    handle_for,
    queue_facts,
    register_device_kind,
    whole_disk_of,
)

if TYPE_CHECKING:
    from .sections import BlockSection


def _whole_disk_and_partitions(sysfs_name: str) -> list[str]:
    base = Path(f"/sys/class/block/{sysfs_name}")
    names = [sysfs_name]
    if base.exists():
        names += [p.name for p in base.iterdir() if (p / "partition").exists()]
    return names


def _parents(sysfs_name: str) -> list[str]:
    """The device itself plus the whole disk it is a partition of."""
    disk = whole_disk_of(sysfs_name)
    return [sysfs_name] if disk is None else [sysfs_name, disk]


def _root_device_names() -> set[str]:
    st = os.stat("/")
    names = set()
    link = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    if link.exists():
        names.update(_parents(link.resolve().name))
    return names


def _mounted_names() -> dict[str, str]:
    """sysfs name -> mount point for every mounted block device."""
    mounted = {}
    for entry in mount_table():
        if not entry.source.startswith("/dev/"):
            continue
        try:
            st = os.stat(entry.source)
        except OSError:
            continue
        if stat.S_ISBLK(st.st_mode):
            link = Path(f"/sys/dev/block/{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}")
            mounted[link.resolve().name] = str(entry.target)
    return mounted


def _signature(path: str) -> str | None:
    """Every signature blkid and wipefs find (file system, RAID, partition table, swap),
    or None if the device looks empty. A result the tools cannot give is a refusal, never
    "empty": blkid exits 8 when signatures contradict each other, the riskiest case."""
    found: list[str] = []
    done = run_command(["blkid", "-p", "-o", "export", path], timeout=30, check=False)
    if done.returncode == 0:
        fields = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
        # PART_ENTRY_* only describe the partition itself, not data on it.
        found += [fields[k] for k in ("TYPE", "PTTYPE") if k in fields]
    elif done.returncode != 2:  # 2: nothing found
        raise DeviceRefused(
            f"cannot tell whether {path} holds data (blkid -p exited {done.returncode}: "
            f"{done.stderr.strip() or 'ambivalent or unreadable signatures'}); inspect it with "
            "`wipefs --no-act` and wipe it yourself if it is free"
        )
    listing = run_command(["wipefs", "--no-act", "--json", path], timeout=30, check=False)
    if listing.returncode != 0:
        raise DeviceRefused(f"cannot list signatures on {path}: {listing.stderr.strip()}")
    if listing.stdout.strip():
        found += [sig.get("type", "?") for sig in json.loads(listing.stdout).get("signatures", [])]
    return ", ".join(dict.fromkeys(found)) or None


def check_device(path: str, *, allow_signature: bool) -> DeviceHandle:
    """Every safety check, in order; raises DeviceRefused saying why and what to do. With
    ``allow_signature`` (force, a resumed study, a disk fslab formatted itself) the
    signatures are not looked for: they would refuse nothing."""
    if not os.path.exists(path):
        raise DeviceRefused(f"{path} does not exist: device.path must name a block device")
    if not stat.S_ISBLK(os.stat(path).st_mode):
        raise DeviceRefused(f"{path} is not a block device: use kind = 'image' for files")
    handle = handle_for(path)
    family = _whole_disk_and_partitions(handle.sysfs_name)
    if set(_parents(handle.sysfs_name)) & _root_device_names() or set(family) & _root_device_names():
        raise DeviceRefused(f"{path} holds the root file system: fslab never formats it")
    mounted = _mounted_names()
    for name in family:
        if name in mounted:
            raise DeviceRefused(
                f"{path} is mounted ({'/dev/' + name} on {mounted[name]}): unmount it first"
            )
    holders = [h.name for n in family for h in Path(f"/sys/class/block/{n}/holders").glob("*")]
    if holders:
        raise DeviceRefused(f"{path} is in use by {', '.join(holders)} (md, dm or similar)")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_EXCL)
        os.close(fd)
    except OSError as exc:
        if exc.errno == errno.EBUSY:
            raise DeviceRefused(f"{path} is in use: another program holds it open exclusively") from None
        raise
    if allow_signature:  # blkid and wipefs only where what they find could refuse the disk
        return handle
    signature = _signature(path)
    if signature:
        raise DeviceRefused(
            f"{path} carries a '{signature}' signature, so it may hold data: wipe it "
            "(wipefs -a) or set device.force = true to let fslab overwrite it"
        )
    return handle


def _confirmed(section: BlockSection | SectionData, allowed: frozenset[str]) -> str:
    assert section.path is not None
    real = os.path.realpath(section.path)
    if section.path not in allowed and real not in allowed:
        raise DeviceRefused(
            f"{section.path} is a real device and its data will be destroyed: confirm with "
            f"`fslab run ... --destroy-data-on {shlex.quote(section.path)}`"
        )
    return real


def identity(sysfs_name: str) -> dict[str, str]:
    """What tells one disk from another at the same path: size and, where the kernel
    knows them, WWN, serial and model (a loop device: its backing file)."""
    base = Path(f"/sys/class/block/{sysfs_name}")
    facts = {"size_sectors": (base / "size").read_text().strip()}
    for name, rel in (("wwid", "device/wwid"), ("serial", "device/serial"),
                      ("model", "device/model"), ("backing_file", "loop/backing_file")):
        try:
            facts[name] = (base / rel).read_text().strip()
        except OSError:
            pass
    return facts


def recorded_identity(grant: Grant, path: str) -> dict[str, str] | None:
    """The identity preflight recorded of the disk at ``path``: a study's identities are
    keyed by disk path (one study may name several disks: entries' own devices, an array's
    members); a study stored by an older fslab holds its one disk's identity unkeyed."""
    if grant.identity is None:
        return None
    if path in grant.identity:
        return dict(json.loads(grant.identity[path]))
    if "size_sectors" in grant.identity:  # unkeyed: the one disk of an older study
        return dict(grant.identity)
    return None


def preflight(section: BlockSection | SectionData, grant: Grant, resuming: bool = False) -> dict[str, str]:
    """Once per study, before anything is written: every check, signature included.
    Returns the device's identity keyed by its path (``{path: JSON of identity()}``), which
    every job carries so that each run can check it is still the same disk. A resumed
    study finds the file system it made itself, on the disk it recorded (``grant.identity``)."""
    # Refusals no confirmation can lift come first (missing, not a block device, the root
    # disk, mounted, in use): asking to confirm those would read like an invitation.
    check_device(os.path.realpath(section.path), allow_signature=True)
    handle = check_device(_confirmed(section, grant.allowed), allow_signature=section.force or resuming)
    expected = recorded_identity(grant, section.path)
    if resuming and expected is not None:
        _same_disk(section, handle, expected)
    return {section.path: json.dumps(identity(handle.sysfs_name), sort_keys=True)}


def _same_disk(section: BlockSection | SectionData, handle: DeviceHandle, expected: dict[str, str]) -> None:
    now = identity(handle.sysfs_name)
    if now != expected:
        raise DeviceRefused(
            f"{section.path} is not the disk this study started on (then {expected}, now {now}): "
            "fslab will not format it; check the device and start a new study"
        )


def checked(path: str, force: bool, grant: Grant) -> DeviceHandle:
    """The checks before each use of a handed-over disk: not missing, the root disk,
    mounted or in use; confirmed with --destroy-data-on; the disk preflight recorded
    (``grant.identity``, keyed by the disk's path)."""
    # The signature was checked in preflight; later runs find the file system fslab made,
    # so each run checks instead that the disk at the path is still the one recorded.
    check_device(os.path.realpath(path), allow_signature=True)
    section = SectionData("block", {"path": path, "force": force})  # as a job carries it
    handle = check_device(_confirmed(section, grant.allowed), allow_signature=True)
    expected = recorded_identity(grant, path)
    if expected is None:
        raise DeviceRefused(f"{path} was not checked before this job (the job carries no "
                            "identity of the disk): run the study through `fslab run`")
    _same_disk(section, handle, expected)
    return handle


@contextlib.contextmanager
def provision(
    section: BlockSection, workdir: Path, tag: str, grant: Grant = NO_GRANT
) -> Iterator[DeviceHandle]:
    handle = checked(section.path, section.force, grant)
    facts = {**disk_facts(handle.path), "kind": "block", "path": section.path}
    yield DeviceHandle(handle.path, handle.sysfs_name, handle.major, handle.minor, facts)


def passthrough(section: BlockSection, grant: Grant) -> list[str]:
    """For a file system only a guest has: the disk, checked as for the host, handed to
    the guest whole (its one virtio disk, fslab.devices.vdisk inside)."""
    return [checked(section.path, section.force, grant).path]


DISK_FACTS = (("model", "device/model"), ("serial", "device/serial"), ("wwid", "device/wwid"),
              ("firmware", "device/firmware_rev"), ("firmware", "device/rev"),
              ("backing_file", "loop/backing_file"))


def disk_facts(path: str) -> dict[str, Any]:
    """What provenance says of a handed-over disk: model, serial, firmware, rotational,
    write cache and I/O scheduler (of the whole disk for a partition), size; a fact the
    kernel does not know is left out (a loop device has no model)."""
    handle = handle_for(os.path.realpath(path))
    whole = _parents(handle.sysfs_name)[-1]
    base = Path(f"/sys/class/block/{whole}")
    facts: dict[str, Any] = {"path": path, "disk": whole}
    for name, rel in DISK_FACTS:
        if name not in facts:
            with contextlib.suppress(OSError):
                facts[name] = (base / rel).read_text().strip()
    facts.update(queue_facts(whole))
    with contextlib.suppress(OSError):  # a partition's own size, not its disk's
        facts["size_bytes"] = int(Path(f"/sys/class/block/{handle.sysfs_name}/size").read_text()) * 512
    return facts


register_device_kind(DeviceKind(
    "block", "BlockSection", provision, preflight,
    tools={"blkid": "util-linux", "wipefs": "util-linux"}, description=__doc__ or "",
    guest_passthrough=passthrough, guest_section=lambda section: {"kind": "vdisk", "index": 0},
    user_disks=lambda section: [section.path], capacity=lambda section: disk_bytes(section.path),
))
