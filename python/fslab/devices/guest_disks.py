"""The virtio disks a guest was given, found by the serial QEMU gave each
(``fslab-disk<i>``, in the order of the guest's disk list). Used inside the guest by the
device kinds that build on them (md RAID members, dm-delay's lower device). Registers no
device kind."""

from __future__ import annotations

from pathlib import Path

from ..errors import FslabError

SERIAL_PREFIX = "fslab-disk"


def guest_disks(sys_block: Path = Path("/sys/block")) -> list[str]:
    """/dev paths of the guest's virtio disks, ordered by their serial's index."""
    found: dict[int, str] = {}
    for dev in sys_block.glob("vd*"):
        try:
            serial = (dev / "serial").read_text().strip()
        except OSError:
            continue
        if serial.startswith(SERIAL_PREFIX) and serial[len(SERIAL_PREFIX):].isdigit():
            found[int(serial[len(SERIAL_PREFIX):])] = f"/dev/{dev.name}"
    return [found[i] for i in sorted(found)]


def take(count: int, first: int = 0) -> list[str]:
    """``count`` guest disks starting at index ``first``; an error naming the shortfall."""
    disks = guest_disks()
    if len(disks) < first + count:
        raise FslabError(f"the guest has {len(disks)} virtio disks, {first + count} are needed: "
                         "the backend must give it one image per member")
    return disks[first:first + count]
