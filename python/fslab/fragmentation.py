"""Layout facts of a mounted file system: where each file's blocks lie (FIEMAP), how
contiguous they are (the layout score), and how the free space is cut up (a histogram of
free extents by size).

Glossary: an *extent* is one FIEMAP record (logical offset, physical offset, length); a
*fragment* is a maximal run of a file's blocks that is physically contiguous (extents the
file system split but laid end to end count as one fragment). The *layout score* of a
file is the fraction of its blocks, after the first, that sit directly after their
predecessor on disk (Smith & Seltzer, "File System Aging", SIGMETRICS 1997; Impressions,
FAST 2009): 1.0 is perfectly contiguous, 0 is every block elsewhere. Files of one block
(or none) have no score and are left out of the whole-file-system score, which is the
same fraction over the blocks of all files.
"""

from __future__ import annotations

import array
import errno
import fcntl
import os
import re
import struct
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .commands import declare_tools, run_command
from .errors import CommandFailed, FslabError
from .metrics import MetricKind, declare_metrics
from .mounts import filesystem_holding, mount_at
from .pagecache import sync_filesystem

# Counted from the histogram below: an aged state's (fslab.aging) and a run's free space
# before and after (fslab.job.execute), declared here so either may be loaded alone.
declare_metrics("free-space facts", {
    "free_extents_count": MetricKind("extents", False, "free-space extents (more = more scattered)"),
})

# linux/fs.h: FS_IOC_FIEMAP = _IOWR('f', 11, struct fiemap); struct fiemap is 32 bytes,
# each struct fiemap_extent 56.
FS_IOC_FIEMAP = 0xC020660B
FIEMAP_FLAG_SYNC = 0x1  # flush delayed allocation first, so every block has a place
FIEMAP_EXTENT_LAST = 0x1
FIEMAP_EXTENT_UNKNOWN = 0x2  # no physical location yet (delalloc not flushed)
FIEMAP_EXTENT_DATA_INLINE = 0x200  # data inside the inode: no block of its own
_HEADER = struct.Struct("=QQIIII")
declare_tools({"e2freefrag": "e2fsprogs", "xfs_spaceman": "xfsprogs"}, "free-space fragmentation")
_EXTENT = struct.Struct("=QQQ16xI12x")
_BATCH = 512  # extents asked for per ioctl


class NoFiemap(FslabError):
    """The file system has no FIEMAP (ntfs-3g and every FUSE file system): its layout facts
    are not available. Of a run's scope: the measurement itself does not need them."""

    scope = "run"


# Errors that mean "this file system does not implement FIEMAP", not "this call failed".
_UNSUPPORTED = (errno.EOPNOTSUPP, errno.ENOTTY, errno.ENOSYS)


def fs_name(path: Path | str) -> str:
    """The file system holding path as a reader knows it: FUSE's ntfs-3g mounts say
    'fuseblk' in /proc/mounts, which names the mechanism, not the file system."""
    entry = filesystem_holding(Path(path))
    if entry is None:
        return "this file system"
    if entry.fs_type == "fuseblk":  # ntfs-3g's mounts (the only FUSE file system fslab makes)
        return "ntfs-3g (FUSE)"
    return f"{entry.fs_type} (FUSE)" if entry.fs_type.startswith("fuse") else entry.fs_type


def unavailable_note(path: Path | str) -> str:
    return f"not available on {fs_name(path)}: it does not report file layout (no FIEMAP or FIBMAP)"


@dataclass(frozen=True)
class Extent:
    logical: int  # bytes from the start of the file
    physical: int  # bytes from the start of the device
    length: int  # bytes
    flags: int


def file_extents(path: Path | str, fuse_by_dev: dict[int, bool] | None = None) -> list[Extent]:
    """Every extent of one regular file, in logical order. Raises FslabError when the file
    system has no FIEMAP (the message names the file system). ``fuse_by_dev``: see
    ``_fibmap_extents``."""
    out: list[Extent] = []
    start = 0
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        while True:
            buf = bytearray(_HEADER.size + _BATCH * _EXTENT.size)
            _HEADER.pack_into(buf, 0, start, (1 << 64) - 1 - start, FIEMAP_FLAG_SYNC, 0, _BATCH, 0)
            try:
                fcntl.ioctl(fd, FS_IOC_FIEMAP, buf, True)
            except OSError as exc:
                if exc.errno in _UNSUPPORTED:
                    return _fibmap_extents(fd, path, fuse_by_dev)
                raise FslabError(f"FIEMAP failed on {path}: {exc.strerror}") from None
            mapped = _HEADER.unpack_from(buf, 0)[3]
            last = False
            for i in range(mapped):
                logical, physical, length, flags = _EXTENT.unpack_from(buf, _HEADER.size + i * _EXTENT.size)
                out.append(Extent(logical, physical, length, flags))
                last = bool(flags & FIEMAP_EXTENT_LAST)
            if last or mapped < _BATCH or mapped == 0:
                return out
            start = out[-1].logical + out[-1].length
    finally:
        os.close(fd)


FIBMAP, FIGETBSZ = 1, 2  # linux/fs.h: _IO(0x00, 1) and _IO(0x00, 2)


def _fibmap_extents(fd: int, path: Path | str, fuse_by_dev: dict[int, bool] | None = None) -> list[Extent]:
    """The file's extents by FIBMAP, one query per allocation unit, for file systems with a
    block map but no FIEMAP (vfat in Debian's 6.1 kernel). Not through FUSE: there every
    query is a round trip to the daemon (ntfs-3g), so FUSE file systems have no layout
    facts. ``fuse_by_dev``: that verdict by device, kept by a caller that asks for many
    files (reading the mount table for each cost a 125-file aged vfat ~10 s in a guest
    under emulation). Raises NoFiemap when neither works."""
    status = os.fstat(fd)
    known = fuse_by_dev if fuse_by_dev is not None else {}
    if status.st_dev not in known:
        entry = filesystem_holding(Path(path))
        known[status.st_dev] = entry is None or entry.fs_type.startswith("fuse")
    if known[status.st_dev]:
        raise NoFiemap(f"file layout of {path}: {unavailable_note(path)}")
    try:
        os.fsync(fd)  # every block placed before it is looked up
        block = struct.unpack("i", fcntl.ioctl(fd, FIGETBSZ, struct.pack("i", 0)))[0]
        unit = max(block, os.fstatvfs(fd).f_bsize)  # a FAT cluster: contiguous by definition
        size = status.st_size
        out: list[Extent] = []
        # The run being extended, in bytes; an Extent is made only when it ends (a 32 MiB
        # file on 512-byte clusters is 65,536 queries, and most extend a run).
        run_logical = run_physical = run_length = 0
        query = array.array("i", [0])
        last = size - unit  # units from here on are the file's partial tail
        for logical in range(0, size, unit):
            query[0] = logical // block
            fcntl.ioctl(fd, FIBMAP, query, True)
            if query[0] == 0:  # a hole
                continue
            physical = query[0] * block
            length = unit if logical <= last else size - logical
            if run_length and run_physical + run_length == physical and run_logical + run_length == logical:
                run_length += length
                continue
            if run_length:
                out.append(Extent(run_logical, run_physical, run_length, 0))
            run_logical, run_physical, run_length = logical, physical, length
        if run_length:
            out.append(Extent(run_logical, run_physical, run_length, 0))
        return out
    except OSError:
        raise NoFiemap(f"file layout of {path}: {unavailable_note(path)}") from None


@dataclass(frozen=True)
class FileLayout:
    """One file's layout in blocks of ``block_size`` bytes."""

    blocks: int  # blocks with a physical place
    fragments: int  # physically contiguous runs
    contiguous_blocks: int  # blocks that follow their predecessor on disk

    @property
    def score(self) -> float | None:
        return self.contiguous_blocks / (self.blocks - 1) if self.blocks > 1 else None


def layout_of(extents: Iterable[Extent], block_size: int) -> FileLayout:
    """Blocks, fragments and contiguous blocks of a file from its extents. Extents without
    a physical place (inline data, unflushed delalloc) hold no blocks and are skipped."""
    blocks = fragments = 0
    expected_next: int | None = None
    for ext in extents:
        if ext.flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DATA_INLINE):
            continue
        n = -(-ext.length // block_size)
        if n == 0:
            continue
        if ext.physical != expected_next:
            fragments += 1
        blocks += n
        expected_next = ext.physical + n * block_size
    # Within a fragment every block but its first follows its predecessor.
    return FileLayout(blocks, fragments, blocks - fragments)


def regular_files(root: Path) -> Iterator[Path]:
    """Every regular file under root (symlinks not followed), in a stable sorted order."""
    stack = [root]
    while stack:
        directory = stack.pop()
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in reversed(entries):
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "lost+found":
                    stack.append(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                yield Path(entry.path)


@dataclass
class LayoutSummary:
    """Layout of every file under a directory."""

    files: int = 0
    blocks: int = 0
    contiguous_blocks: int = 0
    scored_blocks: int = 0  # blocks of files with more than one block, first blocks excluded
    fragments_per_file: dict[int, int] = field(default_factory=dict)  # fragments -> files
    block_size: int = 4096
    unavailable: str = ""  # why there are no layout facts (no FIEMAP); "" when there are

    @property
    def layout_score(self) -> float | None:
        return self.contiguous_blocks / self.scored_blocks if self.scored_blocks else None

    def as_dict(self) -> dict[str, object]:
        if self.unavailable:
            return {"files": self.files, "block_size_bytes": self.block_size, "layout_score": None,
                    "fragments_per_file_mean": None, "unavailable": self.unavailable}
        counts = sorted(self.fragments_per_file.items())
        total = sum(n for _, n in counts)
        mean = sum(k * n for k, n in counts) / total if total else None
        return {
            "files": self.files, "blocks": self.blocks, "block_size_bytes": self.block_size,
            "layout_score": self.layout_score,
            "fragments_per_file_mean": mean,
            "fragments_per_file_max": counts[-1][0] if counts else None,
            "fragments_per_file": {str(k): n for k, n in counts},
        }


def summarize_layout(root: Path, block_size: int | None = None,
                     physical: list[tuple[int, int]] | None = None) -> LayoutSummary:
    """Layout score and fragments per file over every regular file under root. If
    ``physical`` is given, each file's (start, end) byte ranges on the device are appended
    to it (for the FIEMAP-based free-space histogram). Without FIEMAP the summary counts
    files only and says why (``unavailable``); with ``physical`` it raises NoFiemap."""
    bs = block_size or os.statvfs(root).f_bsize
    summary = LayoutSummary(block_size=bs)
    fuse_by_dev: dict[int, bool] = {}
    for path in regular_files(root):
        try:
            extents = file_extents(path, fuse_by_dev)
        except NoFiemap:
            if physical is not None:
                raise
            summary.unavailable = unavailable_note(root)
            summary.files = sum(1 for _ in regular_files(root))
            return summary
        lay = layout_of(extents, bs)
        summary.files += 1
        summary.blocks += lay.blocks
        summary.fragments_per_file[lay.fragments] = summary.fragments_per_file.get(lay.fragments, 0) + 1
        if lay.blocks > 1:
            summary.contiguous_blocks += lay.contiguous_blocks
            summary.scored_blocks += lay.blocks - 1
        if physical is not None:
            physical.extend((e.physical, e.physical + -(-e.length // bs) * bs) for e in extents
                            if not e.flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DATA_INLINE))
    return summary


# --- free space ----------------------------------------------------------------------


@dataclass
class FreeSpaceHistogram:
    """Free extents by size in power-of-two buckets: bucket k holds extents of
    [2^k, 2^(k+1)) bytes. ``method`` says where the numbers came from."""

    method: str  # "e2freefrag" | "xfs_spaceman freesp" | "FAT" | "fiemap-inversion" | "unavailable"
    buckets: dict[int, tuple[int, int]]  # lower bound in bytes -> (extents, free bytes)
    note: str = ""

    @property
    def available(self) -> bool:
        return self.method != "unavailable"

    @property
    def free_extents(self) -> int:
        return sum(n for n, _ in self.buckets.values())

    @property
    def free_bytes(self) -> int:
        return sum(b for _, b in self.buckets.values())

    def as_dict(self) -> dict[str, object]:
        if not self.available:  # no counts at all: 0 would read as "no free extents"
            return {"method": self.method, "note": self.note, "free_extents": None, "free_bytes": None,
                    "buckets": []}
        return {
            "method": self.method, "note": self.note,
            "free_extents": self.free_extents, "free_bytes": self.free_bytes,
            "buckets": [{"from_bytes": lo, "extents": n, "bytes": b}
                        for lo, (n, b) in sorted(self.buckets.items())],
        }


def _bucket(nbytes: int) -> int:
    return 1 << (nbytes.bit_length() - 1)


def histogram_from_sizes(sizes: Iterable[int], method: str, note: str = "") -> FreeSpaceHistogram:
    buckets: dict[int, tuple[int, int]] = {}
    for size in sizes:
        if size <= 0:
            continue
        lo = _bucket(size)
        n, b = buckets.get(lo, (0, 0))
        buckets[lo] = (n + 1, b + size)
    return FreeSpaceHistogram(method, buckets, note)


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_E2_ROW = re.compile(r"^\s*(\d+)([KMGT]?)\.\.\.\s*\S+\s*:\s*(\d+)\s+(\d+)\s")
_E2_BS = re.compile(r"^Blocksize:\s*(\d+)")


def parse_e2freefrag(text: str) -> FreeSpaceHistogram:
    """The histogram e2freefrag prints ("4K...8K- : extents blocks percent")."""
    block_size = None
    buckets: dict[int, tuple[int, int]] = {}
    in_table = False
    for line in text.splitlines():
        if m := _E2_BS.match(line):
            block_size = int(m.group(1))
        if line.startswith("HISTOGRAM"):
            in_table = True
            continue
        if in_table and (m := _E2_ROW.match(line)):
            if block_size is None:
                raise FslabError("e2freefrag printed no block size before its histogram")
            lo = int(m.group(1)) * _UNITS[m.group(2)]
            buckets[lo] = (int(m.group(3)), int(m.group(4)) * block_size)
    if block_size is None:
        raise FslabError("could not read e2freefrag's output (no 'Blocksize:' line)")
    return FreeSpaceHistogram("e2freefrag", buckets)


_XFS_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+[\d.]+\s*$")


def parse_xfs_freesp(text: str, block_size: int) -> FreeSpaceHistogram:
    """xfs_spaceman/xfs_db ``freesp`` rows: from, to (blocks), extents, blocks, percent.
    Rows are power-of-two ranges of blocks; with a power-of-two block size they map onto
    the same byte buckets as the other methods."""
    buckets: dict[int, tuple[int, int]] = {}
    for line in text.splitlines():
        if m := _XFS_ROW.match(line):
            lo = _bucket(int(m.group(1)) * block_size)
            n, b = buckets.get(lo, (0, 0))
            buckets[lo] = (n + int(m.group(3)), b + int(m.group(4)) * block_size)
    return FreeSpaceHistogram("xfs_spaceman freesp", buckets)


def fiemap_inversion(mountpoint: Path) -> FreeSpaceHistogram:
    """Free extents as the gaps between all files' blocks, for any file system with
    FIEMAP. Metadata (inode tables, journal, log, btrees) holds no file, so it counts as
    free here: the totals are an upper bound, the shape of small holes is what it shows."""
    st = os.statvfs(mountpoint)
    ranges: list[tuple[int, int]] = []
    summarize_layout(mountpoint, st.f_bsize, physical=ranges)
    ranges.sort()
    gaps = []
    cursor = 0
    for start, end in ranges:
        if start > cursor:
            gaps.append(start - cursor)
        cursor = max(cursor, end)
    device_end = st.f_blocks * st.f_frsize
    if device_end > cursor:
        gaps.append(device_end - cursor)
    return histogram_from_sizes(
        gaps, "fiemap-inversion",
        note="gaps between file blocks; file-system metadata counts as free (upper bound)",
    )


def fat_free_space(device: str) -> FreeSpaceHistogram:
    """Free extents of a FAT12/16/32 file system from its own map: runs of free (zero)
    entries in the first FAT, read through the block device after a syncfs (the file
    system's metadata lives in the device's page cache, so the copy read is current)."""
    with open(device, "rb") as f:
        boot = f.read(512)
        sector, per_cluster, reserved = struct.unpack_from("<HBH", boot, 11)
        fats = boot[16]
        total = struct.unpack_from("<H", boot, 19)[0] or struct.unpack_from("<I", boot, 32)[0]
        fat_sectors = struct.unpack_from("<H", boot, 22)[0] or struct.unpack_from("<I", boot, 36)[0]
        root_sectors = (struct.unpack_from("<H", boot, 17)[0] * 32 + sector - 1) // sector
        if not sector or not per_cluster or not fat_sectors:
            raise FslabError(f"{device}: not a FAT boot sector")
        clusters = (total - reserved - fats * fat_sectors - root_sectors) // per_cluster
        f.seek(reserved * sector)
        table = f.read(fat_sectors * sector)
    if clusters < 4085:  # FAT12: 12-bit entries, two in three bytes; at most 4,084
        free = bytes(0 if _fat12_entry(table, i) else 1 for i in range(2, clusters + 2))
        runs = [m.end() - m.start() for m in re.finditer(rb"\x01+", free)]
    elif clusters < 65525:
        runs = _free_runs(table[4:(clusters + 2) * 2], 2, 0xFFFF)
    else:
        runs = _free_runs(table[8:(clusters + 2) * 4], 4, 0x0FFFFFFF)
    cluster_bytes = sector * per_cluster
    return histogram_from_sizes((n * cluster_bytes for n in runs), "FAT",
                                note="free clusters in the file system's own allocation table")


def _fat12_entry(table: bytes, i: int) -> int:
    pair = table[i * 3 // 2] | table[i * 3 // 2 + 1] << 8
    return pair & 0xFFF if i % 2 == 0 else pair >> 4


def _free_runs(entries: bytes, width: int, value_mask: int) -> list[int]:
    """Lengths of the runs of free entries (zero under ``value_mask``) among little-endian
    entries of ``width`` bytes, in a few whole-table integer operations instead of a Python
    step per entry (a FAT32 of 64 MiB has 131,072) or numpy (whose import costs a guest
    under emulation ~5 s): each entry is a lane of one big integer."""
    n = len(entries) // width

    def lanes(value: int) -> int:  # value repeated in every lane
        return int.from_bytes(value.to_bytes(width, "little") * n, "little")

    top_bit = 1 << (8 * width - 1)
    values = int.from_bytes(entries[:n * width], "little") & lanes(value_mask)
    # A lane is non-zero iff its top bit is set or adding (top_bit - 1) to its other bits
    # carries into its top bit; that sum never carries out of the lane.
    used = ((values & lanes(top_bit - 1)) + lanes(top_bit - 1) | values) & lanes(top_bit)
    top_bytes = used.to_bytes(n * width, "little")[width - 1::width]  # 0x80 used, 0 free
    return [m.end() - m.start() for m in re.finditer(rb"\x00+", top_bytes)]


def free_space_histogram(mountpoint: Path) -> FreeSpaceHistogram:
    """The free-space histogram from the file system's own map where fslab can read it
    (e2freefrag for ext2/3/4, xfs_spaceman freesp for xfs, the FAT for vfat), else from
    FIEMAP (or FIBMAP) inversion; "unavailable" with the reason on FUSE (ntfs-3g)."""
    entry = mount_at(mountpoint)
    fs_type = entry.fs_type if entry else ""
    settle(mountpoint)
    try:
        if fs_type in ("ext2", "ext3", "ext4") and entry is not None:
            # e2freefrag reads the bitmaps through the block device's page cache, which
            # holds ext4's metadata buffers: after syncfs they are current, not last commit's.
            done = run_command(["e2freefrag", entry.source], timeout=120)
            return parse_e2freefrag(done.stdout)
        if fs_type == "xfs":
            done = run_command(["xfs_spaceman", "-c", "freesp", str(mountpoint)], timeout=120)
            return parse_xfs_freesp(done.stdout, os.statvfs(mountpoint).f_bsize)
        if fs_type in ("vfat", "msdos") and entry is not None:
            return fat_free_space(entry.source)
    except (CommandFailed, OSError, FslabError):
        pass  # fall back to FIEMAP below; the method field says which was used
    try:
        return fiemap_inversion(mountpoint)
    except NoFiemap:
        return FreeSpaceHistogram("unavailable", {}, unavailable_note(mountpoint))


def settle(path: Path, still_s: float = 0.3, limit_s: float = 10.0) -> None:
    """syncfs, then wait until the free block count stays still for ``still_s``: xfs frees
    a deleted file's extents later, in background work (inode inactivation), so a
    histogram taken right after an unlink misses space statfs will soon report."""
    sync_filesystem(path)
    started = time.monotonic()
    last = os.statvfs(path).f_bfree
    still_since = started
    while time.monotonic() - started < limit_s:
        time.sleep(0.05)
        now = os.statvfs(path).f_bfree
        if now != last:
            last, still_since = now, time.monotonic()
            sync_filesystem(path)
        elif time.monotonic() - still_since >= still_s:
            return

