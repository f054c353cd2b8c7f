"""md RAID0/RAID5 over N member devices, assembled inside the guest (the host kernel here
has no md). Members are the guest's virtio disks (one image file each, made by the
backend). Registered as the device kind ``raid``, which only the guest backend can
provide (``needs_guest``).

Parity: RAID5 is created with ``--assume-clean`` by default: the members are fresh,
all-zero sparse images, whose parity (XOR of zeros) is already correct, so the initial
resync would only rewrite zeros and compete with the workload. ``resync = "wait"`` runs
the resync instead and waits for it (its duration is recorded). Either way the device is
stopped and the members' superblocks erased on release, also on errors and Ctrl-C.

Named members (``members = ["/dev/sdb", ...]``): the user's disks, each checked and
confirmed exactly as ``kind = "block"`` (fslab.devices.block) before the study and again
before each job, handed whole to the guest (this host kernel has no md), where the array
is built on them as on images and stopped and wiped the same way. ``assume-clean`` there
means parity is not valid for stripes not yet written: the numbers are a RAID5's, its
redundancy is not until a resync (``resync = "wait"``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ..commands import run_command
from ..errors import CommandFailed
from ..signals import shielded
from ..spec import StrictSection
from ..units import parse_size
from . import NO_GRANT, DeviceHandle, DeviceKind, Grant, disk_bytes, handle_for, queue_facts, register_device_kind
from .guest_disks import take

TOOLS = {"mdadm": "mdadm"}


class RaidSection(StrictSection):
    """``[device]`` with ``kind = "raid"``."""

    level: Literal[0, 5] = Field(description="md RAID level: 0 (striping) or 5 (striping + parity)")
    disks: int = Field(default=8, ge=2, le=32, description="member devices")
    chunk: int = Field(default=512 << 10, description="chunk (stripe unit) per member, bytes")
    member_size: int = Field(default=1 << 30, description="bytes of each member's image")
    resync: Literal["assume-clean", "wait"] = Field(
        default="assume-clean", description="RAID5: skip the initial resync (fresh zeroed "
        "members) or run it and wait")
    members: list[str] = Field(default_factory=list, description="the user's disks to build the array "
                               "on (each checked and confirmed as kind = \"block\"); empty: images")
    force: bool = Field(default=False, description="allow members that carry a signature")

    @field_validator("chunk", "member_size", mode="before")
    @classmethod
    def _size(cls, value: Any) -> int:
        return parse_size(value)

    @model_validator(mode="before")
    @classmethod
    def _disks_from_members(cls, data: Any) -> Any:
        """Named members say how many disks there are."""
        if isinstance(data, dict) and data.get("members") and "disks" not in data:
            return {**data, "disks": len(data["members"])}
        return data

    @model_validator(mode="after")
    def _check(self) -> RaidSection:
        if self.members:
            if len(set(self.members)) != len(self.members):
                raise ValueError("members: a disk is named twice")
            if self.disks != len(self.members):
                raise ValueError(f"disks = {self.disks} but {len(self.members)} members are named: drop disks")
        if self.chunk < 4096 or self.chunk & (self.chunk - 1):
            raise ValueError("chunk must be a power of two of at least 4KiB (md's rule)")
        if self.level == 5 and self.disks < 3:
            raise ValueError("RAID5 needs at least 3 disks")
        if not self.members and self.member_size < 16 * self.chunk:
            raise ValueError("member_size must hold at least 16 chunks")
        return self

    @property
    def data_disks(self) -> int:
        return self.disks - (1 if self.level == 5 else 0)


def _free_md() -> str:
    used = {p.name for p in Path("/sys/block").glob("md*")}
    for i in range(128):
        if f"md{i}" not in used:
            return f"/dev/md{i}"
    raise CommandFailed(["mdadm", "--create"], None, "no free /dev/mdN name")


def _member_facts(path: str) -> dict[str, Any]:
    name = Path(path).name
    facts: dict[str, Any] = {"path": path}
    with contextlib.suppress(OSError):
        facts["serial"] = Path(f"/sys/block/{name}/serial").read_text().strip()
    facts.update(queue_facts(name))
    return facts


@contextlib.contextmanager
def provision(section: RaidSection, workdir: Path, tag: str, grant: Grant = NO_GRANT,
              members: list[str] | None = None) -> Iterator[DeviceHandle]:
    """Create the md device over ``members`` (default: the guest's first ``disks`` virtio
    disks), yield it, always stop it and erase the members' superblocks."""
    members = members if members is not None else take(section.disks)
    md: str | None = None
    try:
        with shielded():  # a Ctrl-C must not land between creating md and naming it
            md = _free_md()
            argv = ["mdadm", "--create", md, "--run", "--quiet", f"--level={section.level}",
                    f"--raid-devices={section.disks}", f"--chunk={section.chunk // 1024}",
                    "--metadata=1.2", "--homehost=fslab", f"--name=fslab-{tag}"]
            if section.level == 5 and section.resync == "assume-clean":
                argv.append("--assume-clean")
            run_command([*argv, *members], timeout=120)
        resync_s = 0.0
        if section.level == 5 and section.resync == "wait":
            started = time.monotonic()
            run_command(["mdadm", "--wait", md], timeout=24 * 3600, check=False)
            resync_s = time.monotonic() - started
        name = Path(md).name
        detail = run_command(["mdadm", "--detail", md], timeout=60).stdout
        md_sys = Path(f"/sys/block/{name}/md")
        facts = {
            "kind": "raid",
            "level": section.level,
            "raid_disks": int((md_sys / "raid_disks").read_text()),
            "data_disks": section.data_disks,
            "chunk_bytes": int((md_sys / "chunk_size").read_text()),
            "layout": (md_sys / "layout").read_text().strip(),
            "resync": section.resync if section.level == 5 else "none (RAID0 has no parity)",
            "resync_s": round(resync_s, 3),
            "members": [_member_facts(m) for m in members],
            "md": {"path": md, **queue_facts(name),
                   "optimal_io_size": int(Path(f"/sys/block/{name}/queue/optimal_io_size").read_text())},
            "mdadm_uuid": _field(detail, "UUID"),
        }
        yield dataclasses.replace(handle_for(md, facts), members=tuple(handle_for(m) for m in members))
    finally:
        with shielded():
            if md is not None:
                run_command(["mdadm", "--stop", md], timeout=120, check=False)
            for member in members:
                run_command(["mdadm", "--zero-superblock", member], timeout=60, check=False)


def _field(detail: str, name: str) -> str | None:
    match = re.search(rf"^\s*{name} : (.+)$", detail, re.M)
    return match.group(1).strip() if match else None


def preflight(section: RaidSection, grant: Grant, resuming: bool = False) -> dict[str, str] | None:
    """Named members: each checked and confirmed exactly as a ``kind = "block"`` disk
    (``--destroy-data-on`` naming each); their identities, by path, for the jobs."""
    from .block import BlockSection
    from .block import preflight as block_preflight

    if not section.members:
        return None
    found: dict[str, str] = {}
    for member in section.members:
        member_grant = Grant(grant.allowed, _member_identity(grant, member))
        found[member] = json.dumps(block_preflight(BlockSection(path=member, force=section.force),
                                                   member_grant, resuming), sort_keys=True)
    return found


def _member_identity(grant: Grant, member: str) -> dict[str, str] | None:
    if grant.identity is None or member not in grant.identity:
        return None
    return dict(json.loads(grant.identity[member]))


def passthrough(section: RaidSection, grant: Grant) -> list[str]:
    """Named members, checked again (as kind = "block" before each use) and handed to the
    guest whole; the array is built on them there."""
    from .block import checked

    return [checked(m, section.force, Grant(grant.allowed, _member_identity(grant, m))).path
            for m in section.members]


def capacity(section: RaidSection) -> int | None:
    """Data bytes of the array: its data disks times the smallest member."""
    sizes = [disk_bytes(m) for m in section.members] if section.members else [section.member_size]
    known = [s for s in sizes if s is not None]
    return section.data_disks * min(known) if known and len(known) == len(sizes) else None


def guest_section(section: RaidSection) -> dict[str, Any]:
    """In the guest: an array over its first ``disks`` virtio disks (the members)."""
    inner = section.model_dump(exclude={"members", "force"})
    if section.members:
        inner["member_size"] = 16 * section.chunk  # unused: the members are given
    return {"kind": "raid", **inner}


register_device_kind(DeviceKind(
    "raid", RaidSection, provision, preflight, tools=TOOLS, needs_guest=True, description=__doc__ or "",
    guest_disks=lambda section: [] if section.members else [section.member_size] * section.disks,
    guest_section=guest_section, guest_passthrough=lambda section, grant: passthrough(section, grant),
    user_disks=lambda section: list(section.members), capacity=capacity,
))
