"""Aging: bring a freshly made file system to a used, fragmented state — seeded, fast and
verified — before a workload measures it.

``age(mountpoint, option)`` writes files of seeded random sizes under ``fslab-aging/``:

* ``random-holes``: fill past the target, delete a random subset so the free space lies
  in holes of random size between surviving files, then refill to the target.
* ``churn`` (Geriatrix-style): fill to the target, then ``rounds`` times delete randomly
  chosen files holding a quarter of the target and create new ones up to it again.

What ``fill`` measures (``fill_by``):

* ``"data"`` (the default): the files aging leaves hold ``fill`` of the *device's* bytes
  (a 4 GiB device aged to 0.5 holds 2 GiB of file data, on every file system). This is
  the aged state a comparison needs: every file system of a study starts from the same
  data, and what its own metadata and reservations cost is part of what is measured, not
  taken off what it holds. The count is exact (file sizes, not statfs), so no top-ups
  steered by writeback timing are needed and, below the overfill ceiling on every file
  system, the same seed gives the same files on each.
* ``"statfs"``: the fraction of all the file system's blocks in use (statfs:
  ``1 - f_bfree / f_blocks``), metadata included and, on ext*, root's reserve counted as
  free. Not comparable across file systems: on a 512 MiB device a 50%-aged xfs (its log
  outside f_blocks, its per-AG reservations counted as used) holds ~20% less data than a
  50%-aged ext4. Kept for studies that mean the file system's own fullness.
  ("Free space as the allocator sees it" was not chosen: equal free space again means
  unequal data, and btrfs's f_bavail is an estimate that moves with chunk allocation.)

Both figures — file data held and statfs blocks in use — are stored with every aged run
(``aging_data_bytes``, ``aging_data_fraction``, ``aging_used_bytes``,
``aging_utilisation_fraction``). The target is reached within ±2% or ``AgingError`` says
what was reached. The same option (seed included) on the same file system gives the same
files in the same order; the report carries a digest of that list.
"""

from __future__ import annotations

import errno
import hashlib
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from .aging_option import AgingOption, FileSizes
from .errors import FslabError, Scope
from .fragmentation import free_space_histogram, summarize_layout
from .metrics import MetricKind, declare_metrics
from .pagecache import sync_filesystem
from .units import format_bytes

AGING_DIR = "fslab-aging"
FILES_PER_DIR = 512
TOLERANCE = 0.02  # the promised accuracy, as a fraction of the device (data) or of the blocks (statfs)
# fill_by = "data": random-holes overfills halfway from the target to this share of the
# device (or to the file system's free space at the start, if less), the same on every
# file system that has room, so they get the same files.
OVERFILL_CEILING = 0.8
QUANTUM = 0.002  # top-ups come in steps of this share of all blocks
CHURN_FRACTION = 0.25  # share of the target each churn round deletes and rewrites
MAX_TOP_UPS = 8
DATA_BYTES = 8 << 20  # seeded random data every file is cut from (defeats compression)


class AgingError(FslabError):
    """Aging could not reach its target; the message says what it reached and why. Its
    scope is the job's: the file system every run of the job needed cannot be had."""

    scope: ClassVar[Scope] = "job"


@dataclass
class AgingReport:
    """What aging did and the state it left, verified after a final sync."""

    option: dict[str, Any]
    fs_type: str | None
    block_size_bytes: int
    utilisation_start: float
    utilisation_target: float | None  # fill_by = "statfs": the fill; None when the fill was of data
    utilisation_reached: float  # statfs: share of the blocks in use, metadata included
    files: int  # files left by aging
    files_created: int
    files_deleted: int
    bytes_written: int
    wall_s: float
    layout: dict[str, Any]
    free_space: dict[str, Any]
    file_set: list[tuple[str, int]] = field(repr=False, default_factory=list)  # (path, bytes) created, in order
    # Absent from reports of older fslab versions, which aged by statfs only.
    fill_by: str = "statfs"  # what the fill measured (AgingOption.fill_by)
    device_bytes: int | None = None  # the device's size, the denominator of a data fill
    data_bytes: int | None = None  # file data aging left: the sum of its files' sizes
    used_bytes: int | None = None  # statfs: blocks in use x block size, metadata included

    @property
    def data_fraction(self) -> float | None:
        """File data left as a fraction of the device (what fill_by = "data" aims at)."""
        if self.data_bytes is None or not self.device_bytes:
            return None
        return self.data_bytes / self.device_bytes

    @property
    def file_set_sha256(self) -> str:
        h = hashlib.sha256()
        for path, size in self.file_set:
            h.update(f"{path}\t{size}\n".encode())
        return h.hexdigest()

    def as_dict(self) -> dict[str, Any]:
        """For provenance: everything but the (long) file list, which is kept as a digest."""
        out = {k: v for k, v in self.__dict__.items() if k != "file_set"}
        out["file_set_sha256"] = self.file_set_sha256
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgingReport:
        data = {k: v for k, v in data.items() if k != "file_set_sha256"}
        return cls(**data)

    def metrics(self, prefix: str = "aging_") -> dict[str, float]:
        """Numbers for the metrics table; names carry their unit (see fslab.metrics)."""
        out = {
            f"{prefix}utilisation_fraction": self.utilisation_reached,
            f"{prefix}files_count": float(self.files),
            f"{prefix}written_bytes": float(self.bytes_written),
            f"{prefix}wall_s": self.wall_s,
        }
        if self.free_space.get("free_extents") is not None:  # None: no FIEMAP (ntfs-3g)
            out[f"{prefix}free_extents_count"] = float(self.free_space["free_extents"])
        if self.layout.get("layout_score") is not None:
            out[f"{prefix}layout_score"] = float(self.layout["layout_score"])
        if self.layout.get("fragments_per_file_mean") is not None:
            out[f"{prefix}fragments_per_file_mean"] = float(self.layout["fragments_per_file_mean"])
        if self.data_bytes is not None:
            out[f"{prefix}data_bytes"] = float(self.data_bytes)
        if self.data_fraction is not None:
            out[f"{prefix}data_fraction"] = self.data_fraction
        if self.used_bytes is not None:
            out[f"{prefix}used_bytes"] = float(self.used_bytes)
        return out


# The verified aged state (AgingReport.metrics); its free_extents_count is declared with
# the free-space histogram that counts them (fslab.fragmentation).
declare_metrics("aging", {
    "utilisation_fraction": MetricKind("fraction", False, "share of the file system's blocks in use (statfs)"),
    "data_bytes": MetricKind("B", False, "file data left by aging (the sum of its files' sizes)"),
    "data_fraction": MetricKind("fraction", False, "file data left by aging, as a share of the device's bytes"),
    "used_bytes": MetricKind("B", False, "bytes in use by statfs after aging (metadata included)"),
    "files_count": MetricKind("files", False, "files present"),
    "written_bytes": MetricKind("B", False, "bytes written while aging (deleted files included)"),
    "layout_score": MetricKind("fraction", True, "share of file blocks contiguous with their predecessor"),
    "fragments_per_file_mean": MetricKind("fragments", False, "mean physically contiguous runs per file"),
})


def utilisation(mountpoint: Path) -> float:
    st = os.statvfs(mountpoint)
    return 1.0 - st.f_bfree / st.f_blocks


def device_bytes_of(mountpoint: Path) -> int | None:
    """The size of the block device mounted at ``mountpoint`` (sysfs); None when its
    source is not a block device this kernel lists."""
    from .mounts import mount_at

    entry = mount_at(mountpoint)
    if entry is None or not entry.source.startswith("/"):
        return None
    # By device number, not name: a device-mapper node made without udev (the guest's
    # emulated devices) is /dev/mapper/NAME, a name /sys/class/block does not list.
    try:
        rdev = os.stat(entry.source).st_rdev
        sysfs = Path(f"/sys/dev/block/{os.major(rdev)}:{os.minor(rdev)}/size")
        return int(sysfs.read_text()) * 512 if rdev else None
    except (OSError, ValueError):
        return None


class _Ager:
    """The state of one aging pass: the files alive, the RNG, what was written. It steers
    by ``planned``, counted in ``unit`` bytes: file-system blocks (fill_by = "statfs") or
    bytes of file data (fill_by = "data")."""

    def __init__(self, mountpoint: Path, option: AgingOption, device_bytes: int | None = None):
        self.root = mountpoint / AGING_DIR
        self.option = option
        self.rng = random.Random(option.seed)
        self.sizes = FileSizes.parse(option.file_sizes)
        st = os.statvfs(mountpoint)
        self.mountpoint = mountpoint
        self.block = st.f_frsize
        self.total_blocks = st.f_blocks
        if device_bytes is None:
            self.unit = self.block
            self.cap = min(option.max_file_size, max(self.block, st.f_blocks * st.f_frsize // 32))
        else:  # in bytes of the device, the same on every file system
            self.unit = 1
            self.cap = min(option.max_file_size, max(4096, device_bytes // 32))
        data = self.rng.randbytes(DATA_BYTES)
        self.data = memoryview(data + data)  # any file starts anywhere and reads on
        self.alive: list[tuple[str, int]] = []  # (relative path, bytes)
        self.created: list[tuple[str, int]] = []
        self.deleted = 0
        self.written = 0
        self.next_index = 0
        self.dirs: set[int] = set()
        self.planned = 0  # blocks: use at the start plus the data blocks of live files

    def measured_blocks(self) -> int:
        """Blocks in use by statfs, after a sync so delayed allocation is counted."""
        sync_filesystem(self.mountpoint)
        st = os.statvfs(self.mountpoint)
        return st.f_blocks - st.f_bfree

    def _blocks(self, nbytes: int) -> int:
        return -(-nbytes // self.unit)

    def data_on_disk(self) -> int:
        """The file data aging left, read back from the files (not from the plan)."""
        return sum(os.stat(self.root / rel).st_size for rel, _ in self.alive)

    def create(self, nbytes: int) -> None:
        index = self.next_index
        self.next_index += 1
        d = index // FILES_PER_DIR
        if d not in self.dirs:
            (self.root / f"d{d:05d}").mkdir(parents=True, exist_ok=True)
            self.dirs.add(d)
        rel = f"d{d:05d}/f{index:08d}"
        path = self.root / rel
        start = self.rng.randrange(DATA_BYTES)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            left = nbytes
            while left:  # one large write per 8 MiB: no per-block Python work
                n = os.write(fd, self.data[start:start + min(left, DATA_BYTES)])
                left -= n
        except OSError as exc:
            os.close(fd)
            path.unlink(missing_ok=True)
            if exc.errno == errno.ENOSPC:
                raise AgingError(
                    f"the file system filled up at {utilisation(self.mountpoint):.1%} utilisation "
                    f"while aging to {self.option.fill:.0%}: lower aging.fill or enlarge the device"
                ) from None
            raise
        os.close(fd)
        self.alive.append((rel, nbytes))
        self.created.append((rel, nbytes))
        self.written += nbytes
        self.planned += self._blocks(nbytes)

    # The phases steer by ``planned`` (data blocks of the files alive, counted from their
    # sizes), not by statfs: statfs moves by a few blocks with writeback timing (extent
    # tree and bitmap blocks), and steering by it would make the file set depend on timing.

    def fill_to(self, target_blocks: int, *, exact: bool) -> None:
        """Create files until the planned use reaches target_blocks; with ``exact`` the
        last file is cut so the plan lands on the target."""
        while self.planned < target_blocks:
            size = self.sizes.draw(self.rng, self.cap)
            if exact:
                size = min(size, (target_blocks - self.planned) * self.unit)
            self.create(size)

    def delete_to(self, target_blocks: int) -> None:
        """Delete randomly chosen files until the planned use falls to target_blocks."""
        while self.planned > target_blocks and self.alive:
            i = self.rng.randrange(len(self.alive))
            self.alive[i], self.alive[-1] = self.alive[-1], self.alive[i]
            rel, nbytes = self.alive.pop()
            (self.root / rel).unlink()
            self.deleted += 1
            self.planned -= self._blocks(nbytes)


def age(mountpoint: Path, option: AgingOption, device_bytes: int | None = None) -> AgingReport:
    """Age the file system mounted at ``mountpoint`` to ``option`` and verify the result.
    ``device_bytes``: the device's size for fill_by = "data" (default: read from sysfs).

    Raises AgingError if the target cannot be reached within ±2% (the message gives what
    was reached), if the file system cannot hold it, or if it is already fuller."""
    from .mounts import mount_at

    started = time.monotonic()
    mountpoint = Path(mountpoint)
    start_util = utilisation(mountpoint)
    if option.fill_by == "data":
        device_bytes = device_bytes or device_bytes_of(mountpoint)
        if not device_bytes:
            raise AgingError(f"cannot tell the size of the device mounted at {mountpoint}, which aging.fill is "
                             "a fraction of: set aging.fill_by = \"statfs\" (a fraction of its blocks)")
        ager = _Ager(mountpoint, option, device_bytes)
        _age_by_data(ager, option, device_bytes)
        data = ager.data_on_disk()
        if abs(data / device_bytes - option.fill) > TOLERANCE:
            raise AgingError(f"aging left {format_bytes(data)} of file data, not {option.fill:.0%} of the "
                             f"{format_bytes(device_bytes)} device ± 2%: files changed beside it")
    else:
        ager = _Ager(mountpoint, option)
        _age_by_statfs(ager, option, start_util)
        data = ager.data_on_disk()
    sync_filesystem(mountpoint)
    st = os.statvfs(mountpoint)
    reached = utilisation(mountpoint)
    wall = time.monotonic() - started
    layout = summarize_layout(ager.root)
    entry = mount_at(mountpoint)
    return AgingReport(
        option=option.model_dump(), fs_type=entry.fs_type if entry else None,
        block_size_bytes=ager.block, utilisation_start=start_util,
        utilisation_target=option.fill if option.fill_by == "statfs" else None, utilisation_reached=reached,
        files=len(ager.alive), files_created=len(ager.created), files_deleted=ager.deleted,
        bytes_written=ager.written, wall_s=wall, layout=layout.as_dict(),
        free_space=free_space_histogram(mountpoint).as_dict(), file_set=ager.created,
        fill_by=option.fill_by, device_bytes=device_bytes, data_bytes=data,
        used_bytes=(st.f_blocks - st.f_bfree) * st.f_frsize,
    )


def _age_by_data(ager: _Ager, option: AgingOption, device_bytes: int) -> None:
    """Steer by bytes of file data, exactly: the plan is the data (no statfs top-ups)."""
    st = os.statvfs(ager.mountpoint)
    offered = st.f_bavail * st.f_frsize  # what the file system offers files now
    target = round(option.fill * device_bytes)
    if target > offered:
        raise AgingError(f"aging.fill = {option.fill:g} of the {format_bytes(device_bytes)} device is "
                         f"{format_bytes(target)} of file data, but this file system offers files only "
                         f"{format_bytes(offered)} (statfs): lower aging.fill or enlarge the device")
    ager.planned = 0
    if option.pattern == "random-holes":
        ceiling = min(round(OVERFILL_CEILING * device_bytes), offered)
        high = target + max(0, ceiling - target) // 2
        low = max(0, target - (high - target) // 2)
        ager.fill_to(high, exact=False)
        sync_filesystem(ager.mountpoint)  # place the files before deleting, so the holes are on disk
        ager.delete_to(low)
        sync_filesystem(ager.mountpoint)
    else:
        ager.fill_to(target, exact=False)
        for _ in range(option.churn_rounds):
            sync_filesystem(ager.mountpoint)
            ager.delete_to(ager.planned - round(CHURN_FRACTION * target))
            ager.fill_to(target, exact=False)
        ager.delete_to(target)
    ager.fill_to(target, exact=True)


def _age_by_statfs(ager: _Ager, option: AgingOption, start_util: float) -> None:
    """Steer by the file system's blocks in use (statfs), metadata included."""
    mountpoint = ager.mountpoint
    total = ager.total_blocks
    target = round(option.fill * total)
    if start_util >= option.fill - TOLERANCE / 2:
        raise AgingError(f"the file system is already {start_util:.1%} used, so aging cannot bring it "
                         f"to {option.fill:.0%}: raise aging.fill or start from an emptier one")
    ager.planned = ager.measured_blocks()
    if option.pattern == "random-holes":
        # Overfill halfway to full, then delete down to below the target: the refill
        # lands in holes left between survivors.
        high = min(0.95, option.fill + 0.5 * (1.0 - option.fill))
        low = max(start_util, option.fill - 0.5 * (high - option.fill))
        ager.fill_to(round(high * total), exact=False)
        sync_filesystem(mountpoint)  # place the files before deleting, so the holes are on disk
        ager.delete_to(round(low * total))
        sync_filesystem(mountpoint)
        ager.fill_to(target, exact=True)
    else:
        ager.fill_to(target, exact=False)
        for _ in range(option.churn_rounds):
            sync_filesystem(mountpoint)
            ager.delete_to(ager.planned - round(CHURN_FRACTION * option.fill * total))
            ager.fill_to(target, exact=False)
        ager.delete_to(target)
    # Metadata (directories, extent trees, journal-free counts) is not in the plan: top
    # up by what statfs says is missing, in steps of QUANTUM of the blocks so that a few
    # blocks of timing noise rarely change the files made.
    quantum = max(1, round(QUANTUM * total))
    for _ in range(MAX_TOP_UPS):
        missing = (target - ager.measured_blocks()) // quantum * quantum
        if missing <= 0:
            break
        ager.fill_to(ager.planned + missing, exact=True)
    reached = utilisation(mountpoint)
    if abs(reached - option.fill) > TOLERANCE:
        raise AgingError(f"aging reached {reached:.1%} utilisation, not {option.fill:.0%} ± 2%: "
                         "the device is too small for these file sizes; enlarge it or lower "
                         "aging.max_file_size")
