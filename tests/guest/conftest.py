"""Fixtures for guest tests: the guest is built once per session and booted once per
module, with its disks as sparse images in the test's own temp folder; the modules that
only run commands in a guest share one boot (``shared_guest``)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

import fslab
from fslab.backends.guest.build import GuestBuild, build
from fslab.backends.guest.launcher import GiB, Guest, GuestConfig, GuestFailed
from fslab.errors import FslabError

MiB = 1 << 20


@pytest.fixture(scope="session")
def guest_build() -> GuestBuild:
    if os.geteuid() != 0:
        pytest.skip("guest tests run as root (QEMU's 9p shares the host root)")
    for tool, package in (("qemu-system-x86_64", "qemu-system-x86"), ("busybox", "busybox-static"),
                          ("depmod", "kmod"), ("apt-get", "apt")):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is missing: apt-get install {package} (make setup does)")
    try:
        return build("6.1")
    except FslabError as exc:
        pytest.skip(f"the guest kernel package cannot be had here: {exc}")


def sparse_image(path: Path, size_bytes: int) -> Path:
    with open(path, "wb") as f:
        f.truncate(size_bytes)
    return path


MEMBER_DISKS = 8  # disks 0-7: 64 MiB md members; disk 8: dm-delay's 64 MiB lower disk
SCRATCH_DISK = MEMBER_DISKS + 1  # disk 9: 1 GiB, for file systems and image files
# disk 10: 64 MiB whose image lies on a 16 MiB host file system: the host refuses writes
# past what fits (ENOSPC), as a failing or full host disk would.
REFUSING_DISK = SCRATCH_DISK + 1
SHARED_FOLDER = "share"  # the shared guest's read-write share: shared_guest.config.shares[SHARED_FOLDER]


@contextlib.contextmanager
def small_host_fs(folder: Path, size_bytes: int) -> Iterator[Path]:
    """A tiny ext4 on a loop device, mounted at folder/small; gone afterwards."""
    image, mountpoint = folder / "small-fs.img", folder / "small"
    sparse_image(image, size_bytes)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
    mountpoint.mkdir()
    loop = subprocess.run(["losetup", "--find", "--show", str(image)], check=True, capture_output=True,
                          text=True).stdout.strip()
    try:
        subprocess.run(["mount", loop, str(mountpoint)], check=True)
        try:
            yield mountpoint
        finally:
            subprocess.run(["umount", str(mountpoint)], check=False)
    finally:
        subprocess.run(["losetup", "-d", loop], check=False)


@pytest.fixture(scope="session")
def shared_guest(guest_build: GuestBuild, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Guest]:
    """One 1 GiB guest for the modules that run commands in a guest (device kinds, kernel
    features, the job entry) rather than studies: a boot less. Each test leaves the disks
    as it found them: arrays stopped and erased, mappings removed, nothing mounted; and
    writes only in a folder of its own under the share."""
    folder = tmp_path_factory.mktemp("shared-guest")
    disks = tuple(sparse_image(folder / f"m{i}.img", 64 * MiB) for i in range(MEMBER_DISKS + 1))
    disks += (sparse_image(folder / "scratch.img", 1 * GiB),)
    share = folder / "share"  # read-write in the guest at the same path (SHARED_FOLDER)
    share.mkdir()
    with small_host_fs(folder, 16 * MiB) as small:
        disks += (sparse_image(small / "refusing.img", 64 * MiB),)
        config = GuestConfig(memory_bytes=1 * GiB, disks=disks, console_path=folder / "console.log",
                             shares={SHARED_FOLDER: share})
        with Guest(config, guest_build) as guest:
            yield guest


def run_python(guest: Guest, script: str, timeout_s: float, args: Sequence[str] = ()) -> str:
    """stdout of ``python -c script ARGS`` in the guest, importing the very fslab this test
    imports (a checkout's, not the one installed in the venv); GuestFailed otherwise."""
    env = {"PYTHONPATH": str(Path(fslab.__file__).resolve().parents[1])}
    r = guest.run([sys.executable, "-c", script, *args], timeout_s, env=env)
    if r.exit_status != 0:
        raise GuestFailed(f"the script exited {r.exit_status} in the guest: {r.stderr.strip()[-2000:]}",
                          guest.console_tail())
    return r.stdout
