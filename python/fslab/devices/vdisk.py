"""A virtio disk of a guest, inside the guest: the guest backend turns an image device
into a sparse image on the host that the guest sees as a virtio disk (found by its
serial, ``fslab-disk<index>``), so the file system under test sits on the guest's block
layer directly, with no loop device between. Used only inside a guest; the backend made
the disk from a fresh sparse image, so no signature or identity check applies."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import DeviceRefused
from . import NO_GRANT, DeviceHandle, DeviceKind, Grant, handle_for, queue_facts, register_device_kind
from .guest_disks import guest_disks

if TYPE_CHECKING:
    from .sections import VdiskSection


@contextlib.contextmanager
def provision(section: VdiskSection, workdir: Path, tag: str, grant: Grant = NO_GRANT) -> Iterator[DeviceHandle]:
    disks = guest_disks()
    if section.index >= len(disks):
        raise DeviceRefused(f"the guest has {len(disks)} virtio disks; disk {section.index} was asked "
                            "for (vdisk devices exist only inside a guest the backend started)")
    handle = handle_for(disks[section.index])
    facts = {"kind": "vdisk", "path": handle.path, "serial": f"fslab-disk{section.index}",
             **queue_facts(handle.sysfs_name)}
    yield DeviceHandle(handle.path, handle.sysfs_name, handle.major, handle.minor, facts)


register_device_kind(DeviceKind("vdisk", "VdiskSection", provision, needs_guest=True, description=__doc__ or ""))
