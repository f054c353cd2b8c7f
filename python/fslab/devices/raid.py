"""md RAID0/RAID5 over N member devices, registered as the device kind ``raid``. It is
built on the host where this kernel has md and the level's personality (probed:
fslab.devices.md_kernel; ``backend = "auto"`` plans it there) and in a QEMU guest
otherwise (``needs_guest`` with a ``host_probe``). Where the members come from is
written in the section, never guessed:

- ``members = ["/dev/sdb", ...]``: the user's disks, each checked and confirmed exactly
  as ``kind = "block"`` (fslab.devices.block) before the study and again before each job;
  on the host the array is built on them, under the guest backend they are handed to the
  guest whole and it is built there.
- none named, on the host: ``disks`` sparse image files of ``member_size`` on loop devices
  (direct I/O, as fslab.devices.image), written in the state file before they exist
  (``fslab cleanup`` releases them), detached and deleted afterwards.
- ``vdisks = N`` (written by the guest backend into the job it runs in the guest, not by
  users): the guest's virtio disks from index N on, one per member (the backend made them
  from images, or from the named disks).

Parity: RAID5 is created with ``--assume-clean`` by default: fresh members are all-zero
sparse images, whose parity (XOR of zeros) is already correct, so the initial resync
would only rewrite zeros and compete with the workload. ``resync = "wait"`` runs the
resync instead and waits for it (its duration is recorded). On named members
``assume-clean`` means parity is not valid for stripes not yet written: the numbers are a
RAID5's, its redundancy is not until a resync. Either way the array is stopped and the
members' md superblocks erased on release, also on errors and Ctrl-C; an array a killed
fslab left is stopped by ``fslab cleanup``.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..commands import run_command
from ..datarecords import replace
from ..errors import CommandFailed
from ..resources import Resource, register, release
from ..signals import shielded
from . import NO_GRANT, DeviceHandle, DeviceKind, Grant, disk_bytes, handle_for, queue_facts, register_device_kind
from .guest_disks import take
from .image import IMAGE_PREFIX, IMAGE_SUFFIX, attach, check_free_space, detach
from .md_kernel import host_md, load_md

if TYPE_CHECKING:
    from .sections import RaidSection

TOOLS = {"mdadm": "mdadm", "losetup": "mount", "modprobe": "kmod"}


def data_disks(section: RaidSection) -> int:
    """The array's disks that hold data (not parity)."""
    return int(section.disks) - (1 if section.level == 5 else 0)


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
def provision(section: RaidSection, workdir: Path, tag: str, grant: Grant = NO_GRANT) -> Iterator[DeviceHandle]:
    """Create the md device over the section's members (module docstring), yield it,
    always stop it and erase the members' superblocks, then release image members."""
    with _members(section, workdir, tag, grant) as members, _array(section, tag, members, workdir) as handle:
        yield handle


@contextlib.contextmanager
def _members(section: RaidSection, workdir: Path, tag: str, grant: Grant) -> Iterator[list[str]]:
    if section.vdisks is not None:  # inside a guest: the disks its backend gave it
        yield take(section.disks, first=section.vdisks)
    elif section.members:  # the user's disks, checked again as kind = "block" before each job
        yield passthrough(section, grant)
    else:
        with image_members(section.disks, section.member_size, workdir, tag) as loops:
            yield loops


@contextlib.contextmanager
def image_members(count: int, size: int, workdir: Path, tag: str) -> Iterator[list[str]]:
    """``count`` sparse images of ``size`` bytes on loop devices (direct I/O), each
    written in the state file before it exists; detached and deleted on the way out,
    also on errors and Ctrl-C."""
    workdir.mkdir(parents=True, exist_ok=True)
    check_free_space(workdir, count * size, "lower device.member_size or device.disks, or keep the "
                     "results directory (-r DIR, its .work folder holds the images) on a larger disk")
    images = [workdir / f"{IMAGE_PREFIX}{tag}-m{i}{IMAGE_SUFFIX}" for i in range(count)]
    loops: list[str] = []
    tokens: list[int] = []
    try:
        for image in images:  # all written down before the first exists
            tokens.append(register(Resource("image", str(image), str(workdir))))
        for image in images:
            with shielded():  # a Ctrl-C must not land between attaching a loop and naming it
                with open(image, "wb") as f:
                    f.truncate(size)
                loops.append(attach(image))
        yield loops
    finally:
        with shielded():
            for loop in loops:
                detach(loop)
            for image, token in zip(images, tokens):
                image.unlink(missing_ok=True)
                release(token)


@contextlib.contextmanager
def _array(section: RaidSection, tag: str, members: list[str], workdir: Path) -> Iterator[DeviceHandle]:
    name = f"fslab-{tag}"
    md: str | None = None
    token: int | None = None
    try:
        load_md(section.level)
        with shielded():  # a Ctrl-C must not land between creating md and naming it
            md = _free_md()
            # Written down first: `fslab cleanup` stops the array if this process dies.
            token = register(Resource("md", md, str(workdir), {"name": name, "members": members}))
            argv = ["mdadm", "--create", md, "--run", "--quiet", f"--level={section.level}",
                    f"--raid-devices={section.disks}", f"--chunk={section.chunk // 1024}",
                    "--metadata=1.2", "--homehost=fslab", f"--name={name}"]
            if section.level == 5 and section.resync == "assume-clean":
                argv.append("--assume-clean")
            run_command([*argv, *members], timeout=120)
        resync_s = 0.0
        if section.level == 5 and section.resync == "wait":
            started = time.monotonic()
            run_command(["mdadm", "--wait", md], timeout=24 * 3600, check=False)
            resync_s = time.monotonic() - started
        sysfs = Path(md).name
        detail = run_command(["mdadm", "--detail", md], timeout=60).stdout
        md_sys = Path(f"/sys/block/{sysfs}/md")
        facts = {
            "kind": "raid",
            "level": section.level,
            "raid_disks": int((md_sys / "raid_disks").read_text()),
            "data_disks": data_disks(section),
            "chunk_bytes": int((md_sys / "chunk_size").read_text()),
            "layout": (md_sys / "layout").read_text().strip(),
            "resync": section.resync if section.level == 5 else "none (RAID0 has no parity)",
            "resync_s": round(resync_s, 3),
            "members": [_member_facts(m) for m in members],
            "md": {"path": md, **queue_facts(sysfs),
                   "optimal_io_size": int(Path(f"/sys/block/{sysfs}/queue/optimal_io_size").read_text())},
            "mdadm_uuid": _field(detail, "UUID"),
        }
        if section.members:  # the user's disks, described as the guest backend describes them
            from .block import disk_facts

            facts["host_disks"] = [disk_facts(m) for m in section.members]
        yield replace(handle_for(md, facts), members=tuple(handle_for(m) for m in members))
    finally:
        with shielded():
            if md is not None:
                stop_array(md, members)
            if token is not None:
                release(token)


def stop_array(md: str, members: list[str]) -> None:
    """Stop ``md`` and erase its members' md superblocks (each step tried even if one fails)."""
    run_command(["mdadm", "--stop", md], timeout=120, check=False)
    for member in members:
        run_command(["mdadm", "--zero-superblock", member], timeout=60, check=False)


def release_left(md: str, name: str, members: list[str], dry_run: bool) -> list[str]:
    """For `fslab cleanup`: stop an array a killed fslab left and erase its members' md
    superblocks, each only while it still carries the array's name (``fslab-<tag>``, unique
    per job): a device since reused is left alone. A line per thing done (or that would be)."""
    def named(argv: list[str]) -> bool:
        found = _field(run_command(argv, timeout=60, check=False).stdout, "Name")
        return found is not None and found.split()[0] == f"fslab:{name}"

    done = []
    if Path(f"/sys/block/{Path(md).name}/md").exists() and named(["mdadm", "--detail", md]):
        done.append(f"stop md array {md} ({name})")
        if not dry_run:
            run_command(["mdadm", "--stop", md], timeout=120, check=False)
    for member in members:
        if Path(member).exists() and named(["mdadm", "--examine", member]):
            done.append(f"erase the md superblock of {member} ({name})")
            if not dry_run:
                run_command(["mdadm", "--zero-superblock", member], timeout=60, check=False)
    return done


def _field(detail: str, name: str) -> str | None:
    match = re.search(rf"^\s*{name} : (.+)$", detail, re.M)
    return match.group(1).strip() if match else None


def preflight(section: RaidSection, grant: Grant, resuming: bool = False) -> dict[str, str] | None:
    """Named members: each checked and confirmed exactly as a ``kind = "block"`` disk
    (``--destroy-data-on`` naming each); their identities, by path, for the jobs."""
    from . import SectionData
    from .block import preflight as block_preflight

    if not section.members:
        return None
    found: dict[str, str] = {}
    for member in section.members:  # a member's section as a job carries it: no pydantic in a guest
        found.update(block_preflight(SectionData("block", {"path": member, "force": section.force}),
                                     grant, resuming))
    return found


def passthrough(section: RaidSection, grant: Grant) -> list[str]:
    """Named members, checked again as kind = "block" before each use: on the host the
    array is built on them, under the guest backend they are handed to the guest whole."""
    from .block import checked

    return [checked(m, section.force, grant).path for m in section.members]


def capacity(section: RaidSection) -> int | None:
    """Data bytes of the array: its data disks times the smallest member."""
    sizes = [disk_bytes(m) for m in section.members] if section.members else [section.member_size]
    known = [s for s in sizes if s is not None]
    return data_disks(section) * min(known) if known and len(known) == len(sizes) else None


def guest_section(section: RaidSection) -> dict[str, Any]:
    """In the guest: an array over its first ``disks`` virtio disks (the members: the
    named disks handed over, or the images the backend made). Every field is written:
    the job reads its section as plain data (fslab.devices.SectionData), without defaults."""
    inner = {**section.model_dump(), "members": [], "force": False}
    if section.members:
        inner["member_size"] = 16 * section.chunk  # unused: the members are given
    return {"kind": "raid", **inner, "vdisks": 0}


register_device_kind(DeviceKind(
    "raid", "RaidSection", provision, preflight, tools=TOOLS, needs_guest=True, description=__doc__ or "",
    host_probe=lambda section: host_md(section.level),
    guest_disks=lambda section: [] if section.members else [section.member_size] * section.disks,
    guest_section=guest_section, guest_passthrough=lambda section, grant: passthrough(section, grant),
    user_disks=lambda section: list(section.members), capacity=capacity,
))
