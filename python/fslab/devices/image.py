"""Sparse image files on loop devices (direct I/O on, so the page cache of the file
holding the image does not hide the file system's own I/O behaviour)."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..commands import run_command
from ..errors import CommandFailed, FslabError
from ..mounts import filesystem_holding
from ..resources import Resource, register, release
from ..signals import shielded
from . import NO_GRANT, DeviceHandle, DeviceKind, Grant, handle_for, queue_facts, register_device_kind

if TYPE_CHECKING:
    from .sections import ImageSection

IMAGE_PREFIX = "fslab-"
IMAGE_SUFFIX = ".img"
# Free space kept back when checking that an image can be filled without filling the disk.
HEADROOM_BYTES = 512 << 20


def check_free_space(directory: Path, size: int,
                     fix: str = "lower device.size, or set device.image_dir to a folder on a larger disk") -> None:
    """An image is sparse, but a workload may fill it: refuse if the disk could not hold
    it (``size`` bytes); ``fix`` says what to change."""
    st = os.statvfs(directory)
    free = st.f_bavail * st.f_frsize
    if free < size + HEADROOM_BYTES:
        raise FslabError(
            f"not enough free space in {directory} for {size >> 20} MiB of images "
            f"({free >> 20} MiB free): {fix}"
        )


@contextlib.contextmanager
def provision(
    section: ImageSection, workdir: Path, tag: str, grant: Grant = NO_GRANT
) -> Iterator[DeviceHandle]:
    directory = Path(section.image_dir) if section.image_dir else workdir
    directory.mkdir(parents=True, exist_ok=True)
    check_free_space(directory, section.size)
    image = directory / f"{IMAGE_PREFIX}{tag}{IMAGE_SUFFIX}"
    loop: str | None = None
    # Written down before it exists: `fslab cleanup` releases the image and any loop
    # device backed by it if this process dies with SIGKILL.
    token = register(Resource("image", str(image), str(workdir)))
    try:
        # Shielded so that a Ctrl-C cannot land between losetup attaching the device and
        # `loop` naming it: deferred, it arrives once the finally below can detach it.
        with shielded():
            with open(image, "wb") as f:
                f.truncate(section.size)
            loop = attach(image)
        facts = {
            "kind": "image",
            "image": str(image),
            "image_size_bytes": section.size,
            "loop_direct_io": _loop_attr(loop, "dio"),
            "backing_fs": _fs_type_of(directory),
            **queue_facts(Path(loop).name),
        }
        yield handle_for(loop, facts)
    finally:
        with shielded():
            if loop is not None:
                detach(loop)
            image.unlink(missing_ok=True)
            release(token)


def attach(image: Path) -> str:
    done = run_command(
        ["losetup", "--find", "--show", "--direct-io=on", str(image)], timeout=60
    )
    return done.stdout.strip()


DETACHED_WITHIN_S = 10.0


def detach(loop: str) -> None:
    """Detach by name; a loop device still busy is retried briefly (udev may hold it).
    A device someone still has open (udev's probe after a change, on a busy machine for
    seconds) is only marked to detach on its last close: this waits for that, so that what
    is released is gone when this returns (bounded: a holder that stays keeps it)."""
    import time

    backing = Path(f"/sys/block/{Path(loop).name}/loop/backing_file")
    was = _read_or_none(backing)
    for attempt in range(20):
        try:
            run_command(["losetup", "-d", loop], timeout=30)
            break
        except CommandFailed as exc:
            if "No such device" in exc.stderr or "not a loop" in exc.stderr.lower():
                return
            if attempt == 19:
                raise
            time.sleep(0.1)
    # Called shielded (a release must not be cut short): a Ctrl-C waits for this too.
    deadline = time.monotonic() + DETACHED_WITHIN_S
    # the same file still behind it (a device freed and taken by another attach is not ours)
    while was is not None and _read_or_none(backing) == was and time.monotonic() < deadline:
        time.sleep(0.02)


def _read_or_none(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _loop_attr(loop: str, name: str) -> str | None:
    try:
        return Path(f"/sys/block/{Path(loop).name}/loop/{name}").read_text().strip()
    except OSError:
        return None


def _fs_type_of(directory: Path) -> str | None:
    entry = filesystem_holding(directory)
    return entry.fs_type if entry else None


def owner_pid(image: str) -> int | None:
    """The pid of the fslab process that made an image (``fslab-<pid>-<id>.img``)."""
    parts = Path(image).name.removeprefix(IMAGE_PREFIX).split("-")
    return int(parts[0]) if len(parts) == 2 and parts[0].isdigit() else None


def loops_backed_by(image: str, by_name: bool = False) -> list[str]:
    """Loop devices whose backing file is ``image`` (also when it was already deleted);
    ``by_name``: any fslab image of that (unique, pid-stamped) file name, wherever it is."""
    if by_name:
        return [loop for loop, backing in fslab_loop_devices() if Path(backing).name == Path(image).name]
    return [loop for loop, backing in fslab_loop_devices() if backing == image]


def fslab_loop_devices() -> list[tuple[str, str]]:
    """(loop device, backing file) for every loop device backed by an fslab image, also
    when the image was already deleted (the kernel then appends ' (deleted)')."""
    done = run_command(["losetup", "--list", "--json", "--output", "NAME,BACK-FILE"],
                       timeout=30, check=False)
    if not done.stdout.strip():
        return []
    found = []
    for dev in json.loads(done.stdout).get("loopdevices", []):
        backing = (dev.get("back-file") or "").removesuffix(" (deleted)")
        name = Path(backing).name
        if name.startswith(IMAGE_PREFIX) and name.endswith(IMAGE_SUFFIX):
            found.append((dev["name"], backing))
    return found


register_device_kind(DeviceKind(
    "image", "ImageSection", provision, image_file=True, tools={"losetup": "mount"}, description=__doc__ or "",
    capacity=lambda section: section.size,
    # In a guest the image is the guest's first virtio disk (no loop device in between).
    guest_disks=lambda section: [section.size],
    guest_section=lambda section: {"kind": "vdisk", "index": 0},
))
