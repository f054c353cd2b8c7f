"""`fslab plan` refuses every disk `fslab run` would refuse for a reason that needs no write:
a regular file given as a block device, the root disk, a mounted device, a device with a
file-system signature (without force). A free loop device plans (run then asks for
--destroy-data-on)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

STUDY = """
[study]
name = "disks"
repetitions = 1
[device]
kind = "block"
path = "{path}"
[filesystems.ext4]
[[workloads]]
kind = "fio"
name = "w"
rw = "write"
size = "4M"
"""


def plan(tmp_path: Path, path: str) -> subprocess.CompletedProcess[str]:
    study = tmp_path / "s.toml"
    study.write_text(STUDY.format(path=path))
    return subprocess.run([sys.executable, "-m", "fslab.cli", "plan", str(study)], capture_output=True,
                          text=True, timeout=120)


def root_disk() -> str:
    st = os.stat("/")
    name = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}").resolve().name
    return f"/dev/{name}"


def test_a_regular_file_as_a_block_device_is_refused(tmp_path: Path) -> None:
    image = tmp_path / "disk.img"
    image.write_bytes(b"\0" * 4096)
    done = plan(tmp_path, str(image))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "is not a block device" in done.stderr and "s.toml" in done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="the root disk's checks need root")
def test_the_root_disk_is_refused(tmp_path: Path) -> None:
    if not Path(root_disk()).exists():
        pytest.skip(f"/ is on no block device here ({root_disk()})")
    done = plan(tmp_path, root_disk())
    assert done.returncode == 2, done.stdout + done.stderr
    assert "holds the root file system" in " ".join(done.stderr.split())


def test_a_mounted_or_formatted_device_is_refused_and_a_free_one_plans(device_support, tmp_path: Path) -> None:
    image = tmp_path / "disk.img"
    with image.open("wb") as f:
        f.truncate(128 << 20)
    loop = subprocess.run(["losetup", "--find", "--show", str(image)], capture_output=True, text=True,
                          check=True).stdout.strip()
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    try:
        free = plan(tmp_path, loop)
        assert free.returncode == 0, free.stderr
        subprocess.run(["mkfs.ext4", "-q", loop], check=True, capture_output=True)
        formatted = plan(tmp_path, loop)
        assert formatted.returncode == 2 and "signature" in formatted.stderr, formatted.stderr
        subprocess.run(["mount", loop, str(mnt)], check=True)
        try:
            mounted = plan(tmp_path, loop)
        finally:
            subprocess.run(["umount", str(mnt)], check=True)
        assert mounted.returncode == 2, mounted.stdout + mounted.stderr
        assert "is mounted" in " ".join(mounted.stderr.split()) and "unmount it first" in mounted.stderr
    finally:
        subprocess.run(["losetup", "-d", loop], check=False)
