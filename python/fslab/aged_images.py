"""Aged once, reused: an aged file-system image is made once per key (file system, mkfs
options, aging option) and every repetition starts from a copy of it, so each starts
from the identical state and aging's cost is paid once.

Copies are ``cp --reflink=auto --sparse=always``: a reflink (shared extents, instant)
where the results disk supports it (btrfs, xfs with reflink), else a sparse copy that
skips the image's holes. Which one happened is read back from the copy (FIEMAP's
shared-extent flag), not assumed.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .aging import AgingReport, age
from .aging_option import AgingOption
from .commands import declare_tools, run_command
from .devices import DeviceHandle, handle_for, queue_facts
from .devices.image import IMAGE_PREFIX, IMAGE_SUFFIX, attach, check_free_space, detach
from .errors import FslabError
from .filesystems import FILESYSTEMS, mkfs, mounted
from .fragmentation import file_extents
from .kernel_log import IMAGE_NOT_KEPT, DiskErrorWatch
from .resources import tracked
from .signals import shielded

FIEMAP_EXTENT_SHARED = 0x2000
AGED_IMAGES_DIR = "aged-images"  # the cache, under a work directory: later jobs and resumes reuse it
declare_tools({"cp": "coreutils", "fstrim": "util-linux"}, "aged images")


@dataclass(frozen=True)
class AgedCopy:
    """One repetition's copy of an aged image and what it cost."""

    image: Path
    original: Path  # the cached aged image this is a copy of
    report: AgingReport  # the aging that made the original (its cost included)
    cache_hit: bool  # the original existed already: aging was not paid for this copy
    make_s: float  # wall time of making the original (0 on a cache hit)
    copy_s: float  # wall time of this copy
    copy_method: str  # "reflink" | "sparse copy"

    def to_dict(self) -> dict[str, Any]:
        """Plain data, to travel in a job (a guest mounts a copy the host made)."""
        return {"image": str(self.image), "original": str(self.original),
                "report": {**self.report.as_dict(), "file_set": self.report.file_set},
                "cache_hit": self.cache_hit, "make_s": self.make_s, "copy_s": self.copy_s,
                "copy_method": self.copy_method}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgedCopy:
        return cls(Path(data["image"]), Path(data["original"]), AgingReport.from_dict(data["report"]),
                   bool(data["cache_hit"]), float(data["make_s"]), float(data["copy_s"]), data["copy_method"])

    def provenance(self) -> dict[str, object]:
        return {"aging": self.report.as_dict(), "aged_image": str(self.original),
                "aged_image_cache_hit": self.cache_hit,
                "aged_image_make_s": self.make_s, "aged_image_copy_s": self.copy_s,
                "aged_image_copy_method": self.copy_method}


def image_key(fs_type: str, mkfs_args: list[str], size_bytes: int, option: AgingOption,
              mount_options: list[str] | None = None) -> str:
    """The text that names an aged image: what went into making it (mount options too:
    they steer allocation), nothing else."""
    return json.dumps({"fs": fs_type, "mkfs": list(mkfs_args), "size": size_bytes,
                       "mount": list(mount_options or []), "aging": option.model_dump()}, sort_keys=True)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One maker per key: a second study waits for the first one's image instead of
    aging the same state twice."""
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def aged_image(key: str, make: Callable[[Path], AgingReport], cache_dir: Path, dest: Path) -> AgedCopy:
    """Copy the aged image for ``key`` to ``dest``, making it first with ``make(path)``
    if the cache does not hold it. ``make`` must leave a complete, unmounted image at
    ``path`` and return its AgingReport. Raises FslabError if the copy fails."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:20]
    original = cache_dir / f"aged-{digest}.img"
    meta = cache_dir / f"aged-{digest}.json"
    make_s = 0.0
    with _locked(cache_dir / f"aged-{digest}.lock"):
        hit = original.exists() and meta.exists()
        if hit:
            stored = json.loads(meta.read_text())
            if stored.get("key") != key:  # a digest collision or a foreign file
                raise FslabError(f"{meta} belongs to another aged image; remove {original} and {meta}")
            report = AgingReport.from_dict(stored["report"])
        else:
            # Built under a name `fslab cleanup` recognises (owner pid), renamed when whole.
            building = cache_dir / f"{IMAGE_PREFIX}{os.getpid()}-aged{digest}{IMAGE_SUFFIX}"
            started = time.monotonic()
            try:
                report = make(building)
                os.replace(building, original)
            finally:
                building.unlink(missing_ok=True)
            make_s = time.monotonic() - started
            tmp = meta.with_suffix(".json.part")
            tmp.write_text(json.dumps({"key": key, "make_s": make_s,
                                       "report": {**report.as_dict(), "file_set": report.file_set}}))
            os.replace(tmp, meta)
        started = time.monotonic()
        dest.parent.mkdir(parents=True, exist_ok=True)
        run_command(["cp", "--reflink=auto", "--sparse=always", str(original), str(dest)], timeout=3600)
        copy_s = time.monotonic() - started
    return AgedCopy(dest, original, report, hit, make_s, copy_s, _copy_method(dest))


def _copy_method(copy: Path) -> str:
    try:
        shared = any(e.flags & FIEMAP_EXTENT_SHARED for e in file_extents(copy)[:64])
    except FslabError:
        shared = False
    return "reflink" if shared else "sparse copy"


def make_aged_filesystem(image: Path, size_bytes: int, fs_type: str, mkfs_args: list[str],
                         mount_options: list[str], option: AgingOption, workdir: Path) -> AgingReport:
    """Make a sparse image, mkfs it on a loop device, mount, age, unmount and detach.
    Everything made is released also on errors and Ctrl-C (the image is left for the
    caller, who removes it if aging failed)."""
    fstype = FILESYSTEMS.get(fs_type)
    loop: str | None = None
    # Written down before it exists: `fslab cleanup` detaches and removes a half-made
    # image if this process dies with SIGKILL.
    with tracked("image", str(image), str(workdir)):
        try:
            with shielded():
                with open(image, "wb") as f:
                    f.truncate(size_bytes)
                loop = attach(image)
            device = handle_for(loop, {"kind": "image", "image": str(image)})
            with DiskErrorWatch() as watch:
                mkfs(fstype, device, list(mkfs_args))
                mountpoint = workdir / f"mnt-aging-{os.getpid()}-{os.urandom(3).hex()}"
                with mounted(fstype, device, list(mount_options), mountpoint):
                    report = age(mountpoint, option)
                    # Deleted files' blocks become holes in the image (the loop device punches
                    # them), so a copy moves only live data and free space reads as zeros.
                    run_command(["fstrim", str(mountpoint)], timeout=600, check=False)
                # An image aged on a disk that refused writes would be every repetition's start.
                watch.refuse(device.kernel_names(), "while it was aged", IMAGE_NOT_KEPT)
                return report
        finally:
            with shielded():
                if loop is not None:
                    detach(loop)


@contextlib.contextmanager
def aged_image_device(fs_type: str, mkfs_args: list[str], mount_options: list[str], size_bytes: int,
                      option: AgingOption, work_dir: Path, cache_dir: Path,
                      tag: str) -> Iterator[tuple[DeviceHandle, AgedCopy]]:
    """A loop device on this job's copy of the aged image (made first if the cache lacks
    it), for the executor in place of provision + mkfs. Detached and removed on exit."""
    work_dir.mkdir(parents=True, exist_ok=True)
    check_free_space(work_dir, size_bytes)
    image = work_dir / f"{IMAGE_PREFIX}{tag}{IMAGE_SUFFIX}"
    loop: str | None = None

    def make(path: Path) -> AgingReport:
        return make_aged_filesystem(path, size_bytes, fs_type, mkfs_args, mount_options, option, work_dir)

    with tracked("image", str(image), str(work_dir)):
        try:
            copy = aged_image(image_key(fs_type, mkfs_args, size_bytes, option, mount_options),
                              make, cache_dir, image)
            with shielded():
                loop = attach(image)
            facts = {"kind": "image", "image": str(image), "image_size_bytes": size_bytes,
                     "copy_of": str(copy.original), **queue_facts(Path(loop).name)}
            yield handle_for(loop, facts), copy
        finally:
            with shielded():
                if loop is not None:
                    detach(loop)
                image.unlink(missing_ok=True)
