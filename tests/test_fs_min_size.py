"""Each file system's smallest device is what its mkfs says here (checked against the real
tool, just below and at the figure), and `fslab plan` refuses a smaller device before
anything is made, naming the entry, the figure and the fix."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fslab.devices.sections import ImageSection
from fslab.filesystems import FILESYSTEMS


@pytest.mark.parametrize("name", ["xfs", "btrfs"])
def test_the_declared_floor_is_the_tools(tmp_path: Path, name: str) -> None:
    fs = FILESYSTEMS.get(name)
    if shutil.which(fs.mkfs_tool) is None:
        pytest.skip(f"{fs.mkfs_tool} is not installed")
    floor = fs.min_device_bytes
    results = {}
    for size in (floor - (1 << 20), floor):
        image = tmp_path / f"{size}.img"
        with image.open("wb") as f:
            f.truncate(size)
        results[size] = subprocess.run([fs.mkfs_tool, "-f", "-q", str(image)], capture_output=True).returncode
        image.unlink()
    assert results == {floor - (1 << 20): 1, floor: 0}


def test_plan_refuses_a_device_below_a_file_systems_floor(tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text('[study]\nname = "small"\n[device]\nsize = "256MiB"\n[filesystems.ext4]\n[filesystems.xfs]\n'
                     '[filesystems.btrfs]\n[[workloads]]\nkind = "fio"\nname = "w"\nrw = "write"\nsize = "4M"\n')
    done = subprocess.run([sys.executable, "-m", "fslab.cli", "plan", str(study)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "COLUMNS": "300"})
    said = " ".join(done.stderr.split())
    assert done.returncode == 2, done.stdout + done.stderr
    assert "filesystems.xfs: xfs refuses a device below 300 MiB" in said
    assert "filesystems.btrfs: btrfs refuses a device below 109 MiB" not in said  # 256 MiB is enough for it
    assert "raise device.size to at least 300 MiB" in said and "filesystems.ext4" not in said
    study.write_text(study.read_text().replace('"256MiB"', '"300MiB"'))
    ok = subprocess.run([sys.executable, "-m", "fslab.cli", "plan", str(study)], capture_output=True, text=True,
                        timeout=120)
    assert ok.returncode == 0, ok.stderr


def test_the_image_floor_says_each_file_systems_own() -> None:
    with pytest.raises(ValueError, match="xfs 300 MiB"):
        ImageSection(size="32MiB")
