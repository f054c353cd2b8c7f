"""Aged once, reused: the aged image is made once per key and every repetition starts
from a byte-identical copy, on a real loop-mounted ext4."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from fslab.aged_images import aged_image, image_key, make_aged_filesystem
from fslab.aging import AgingReport, utilisation
from fslab.aging_option import AgingOption
from fslab.devices import handle_for
from fslab.devices.image import attach, detach
from fslab.filesystems import FILESYSTEMS, mounted


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(8 << 20):
            h.update(chunk)
    return h.hexdigest()


def test_aged_image_made_once_copies_identical(device_support: None, tmp_path: Path) -> None:
    option = AgingOption(fill=0.5, seed=11)
    size = 256 << 20
    key = image_key("ext4", [], size, option)
    made: list[Path] = []

    def make(image: Path) -> AgingReport:
        made.append(image)
        return make_aged_filesystem(image, size, "ext4", [], [], option, tmp_path)

    cache = tmp_path / "cache"
    first = aged_image(key, make, cache, tmp_path / "rep1.img")
    original_sum = _sha256(next(cache.glob("aged-*.img")))
    assert len(made) == 1 and not first.cache_hit and first.make_s > 0
    assert abs((first.report.data_fraction or 0) - 0.5) <= 0.02 and first.report.device_bytes == size

    # Repetition 1 runs on its copy and changes it ...
    loop = attach(first.image)
    try:
        with mounted(FILESYSTEMS.get("ext4"), handle_for(loop), [], tmp_path / "mnt-rep1") as m:
            assert abs(utilisation(m.mountpoint) - first.report.utilisation_reached) < 0.005
            assert (m.mountpoint / "fslab-aging").is_dir()
            (m.mountpoint / "new").write_bytes(os.urandom(1 << 20))
    finally:
        detach(loop)
    assert _sha256(first.image) != original_sum

    # ... and repetition 2 still starts from the state aging left, without aging again.
    second = aged_image(key, make, cache, tmp_path / "rep2.img")
    assert len(made) == 1 and second.cache_hit and second.make_s == 0
    assert _sha256(second.image) == original_sum
    assert second.report.file_set_sha256 == first.report.file_set_sha256
    assert second.copy_method in ("reflink", "sparse copy")
    # sparse: the copy takes no more disk than the data aging wrote plus metadata
    assert os.stat(second.image).st_blocks * 512 < 0.75 * size


def test_failed_aging_leaves_nothing_cached(device_support: None, tmp_path: Path) -> None:
    from fslab.aging import AgingError

    option = AgingOption(fill=0.99, seed=1, file_sizes="fixed:1MiB")
    size = 128 << 20

    def make(image: Path) -> AgingReport:
        return make_aged_filesystem(image, size, "ext4", [], [], option, tmp_path)

    with pytest.raises(AgingError):
        aged_image(image_key("ext4", [], size, option), make, tmp_path / "cache", tmp_path / "r.img")
    assert not list((tmp_path / "cache").glob("*.img"))
    assert not (tmp_path / "r.img").exists()


def test_cleanup_after_sigkill_while_aging(device_support: None, tmp_path: Path) -> None:
    """Killed mid-aging, the half-made image, its loop device and its mount are in the
    state file, and `fslab cleanup --under` releases all of them."""
    import subprocess
    import sys
    import time

    script = (
        "from pathlib import Path\n"
        "from fslab.aged_images import make_aged_filesystem\n"
        "from fslab.aging_option import AgingOption\n"
        f"d = Path({str(tmp_path)!r})\n"
        "make_aged_filesystem(d / 'fslab-0-agedtest.img', 1 << 30, 'ext4', [], [],\n"
        "                     AgingOption(fill=0.9, seed=1, file_sizes='fixed:4KiB', fill_by='statfs'), d)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 60
    mounted_now = False
    while time.monotonic() < deadline and not mounted_now:
        time.sleep(0.05)
        mounted_now = any(str(tmp_path) in line and "mnt-aging" in line
                          for line in Path("/proc/mounts").read_text().splitlines())
    assert mounted_now and proc.poll() is None
    time.sleep(0.3)  # aging is under way
    proc.kill()
    proc.wait()
    assert any(str(tmp_path) in line for line in Path("/proc/mounts").read_text().splitlines())
    done = subprocess.run([sys.executable, "-m", "fslab.cli", "cleanup", "--under", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not any(str(tmp_path) in line for line in Path("/proc/mounts").read_text().splitlines())
    losetup = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    assert str(tmp_path) not in losetup
    assert not list(tmp_path.glob("*.img"))
