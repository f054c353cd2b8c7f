"""Layout facts on real file systems: FIEMAP extents, the layout score, free-space
histograms from e2freefrag / xfs_spaceman and from FIEMAP inversion; parsers pinned to
real tool output."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fslab.fragmentation import (
    Extent,
    fiemap_inversion,
    file_extents,
    free_space_histogram,
    layout_of,
    parse_e2freefrag,
    parse_xfs_freesp,
    summarize_layout,
)
from fslab.pagecache import sync_filesystem

E2FREEFRAG = """\
Device: /dev/loop0
Blocksize: 1024 bytes
Total blocks: 262144
Free blocks: 223129 (85.1%)

Min. free extent: 207 KB
Max. free extent: 65504 KB
Avg. free extent: 18594 KB
Num. free extent: 12

HISTOGRAM OF FREE EXTENT SIZES:
Extent Size Range :  Free extents   Free Blocks  Percent
  128K...  256K-  :             2           460    0.21%
    1M...    2M-  :             1          1024    0.46%
    8M...   16M-  :             5         72692   32.58%
   32M...   64M-  :             3        146905   65.84%
"""

XFS_FREESP = """\
   from      to extents  blocks    pct
      4       7       1       6   0.01
   8192   16383       1   16374  14.68
  16384   32768       3   95188  85.32
"""


def test_parse_e2freefrag() -> None:
    h = parse_e2freefrag(E2FREEFRAG)
    assert h.method == "e2freefrag"
    assert h.buckets[128 << 10] == (2, 460 * 1024)
    assert h.buckets[32 << 20] == (3, 146905 * 1024)
    assert h.free_extents == 11
    assert h.free_bytes == (460 + 1024 + 72692 + 146905) * 1024


def test_parse_xfs_freesp() -> None:
    h = parse_xfs_freesp(XFS_FREESP, 4096)
    assert h.buckets[16 << 10] == (1, 6 * 4096)  # 4..7 blocks of 4 KiB
    assert h.buckets[32 << 20] == (1, 16374 * 4096)
    assert h.buckets[64 << 20] == (3, 95188 * 4096)


def test_layout_of_counts_physical_contiguity_across_extents() -> None:
    bs = 4096
    # two extents laid end to end are one fragment; a jump starts a new one
    extents = [Extent(0, 0, 4 * bs, 0), Extent(4 * bs, 4 * bs, 4 * bs, 0), Extent(8 * bs, 100 * bs, 2 * bs, 1)]
    lay = layout_of(extents, bs)
    assert (lay.blocks, lay.fragments, lay.contiguous_blocks) == (10, 2, 8)
    assert lay.score == pytest.approx(8 / 9)
    assert layout_of([Extent(0, 0, bs, 1)], bs).score is None  # one block: no score


def _write(path: Path, nbytes: int, preallocate: bool = False) -> None:
    with open(path, "wb") as f:
        if preallocate:
            os.posix_fallocate(f.fileno(), 0, nbytes)
        f.write(os.urandom(nbytes))


def _fill_free_space(path: Path) -> None:
    """Preallocate one file over (nearly) all free space: what is left is < 16 blocks."""
    st = os.statvfs(path.parent)
    size = st.f_bfree * st.f_frsize
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while size > 0:
            try:
                os.posix_fallocate(fd, 0, size)
                return
            except OSError:
                size -= 16 * st.f_frsize
    finally:
        os.close(fd)


def test_sequential_file_scores_one_file_in_holes_scores_low(mounted_fs) -> None:
    with mounted_fs("ext4", size="128MiB", mkfs_args=("-b", "4096")) as (_, mnt):
        # Space for all of it first, in one request: a buffered write alone was split once in
        # a CI run (2046 + 2 blocks), writeback having started before the write's end.
        _write(mnt / "seq", 8 << 20, preallocate=True)
        sync_filesystem(mnt)
        lay = layout_of(file_extents(mnt / "seq"), 4096)
        assert lay.blocks == 2048
        assert lay.score == 1.0
        # 1024 one-block files side by side, the rest of the space taken, then every
        # other small file deleted: a new file can only go into 4 KiB holes.
        small = mnt / "small"
        small.mkdir()
        for i in range(1024):
            _write(small / f"s{i:04d}", 4096)
        sync_filesystem(mnt)
        _fill_free_space(mnt / "filler")
        for i in range(0, 1024, 2):
            (small / f"s{i:04d}").unlink()
        sync_filesystem(mnt)
        _write(mnt / "holes", 512 * 4096)
        sync_filesystem(mnt)
        lay_h = layout_of(file_extents(mnt / "holes"), 4096)
        assert lay_h.blocks == 512
        assert lay_h.fragments > 100
        assert lay_h.score is not None and lay_h.score < 0.5
        # FIBMAP (vfat's way, no FIEMAP there) sees the same layout block for block
        from fslab.fragmentation import _fibmap_extents

        fd = os.open(mnt / "holes", os.O_RDONLY)
        try:
            assert layout_of(_fibmap_extents(fd, mnt / "holes"), 4096) == lay_h
        finally:
            os.close(fd)
        whole = summarize_layout(mnt)
        assert whole.files == 3 + 512
        assert whole.layout_score is not None and lay_h.score < whole.layout_score < 1.0


@pytest.mark.parametrize("fs_type", ["ext4", "xfs"])
def test_free_space_histogram_agrees_with_statfs(mounted_fs, fs_type: str) -> None:
    with mounted_fs(fs_type, size="512MiB") as (_, mnt):
        for i in range(40):
            # each file written out before the next: xfs's speculative preallocation past
            # EOF would otherwise change the holes left between survivors
            _write(mnt / f"f{i}", 1 << 20)
            sync_filesystem(mnt)
        for i in range(0, 40, 2):
            (mnt / f"f{i}").unlink()
        sync_filesystem(mnt)  # xfs frees extents when the transaction commits, not at unlink
        before = free_space_histogram(mnt)
        assert before.method == ("e2freefrag" if fs_type == "ext4" else "xfs_spaceman freesp")
        st = os.statvfs(mnt)
        statfs_free = st.f_bfree * st.f_frsize
        # the tools count the same free space statfs does (xfs holds a few blocks back)
        assert abs(before.free_bytes - statfs_free) < 0.1 * statfs_free
        # 20 holes of 1 MiB between survivors show up as extents of about 1 MiB
        mib_holes = before.buckets.get(1 << 20, (0, 0))[0] + before.buckets.get(512 << 10, (0, 0))[0]
        assert mib_holes >= 15
        inverted = fiemap_inversion(mnt)
        assert inverted.method == "fiemap-inversion"
        assert inverted.free_bytes >= before.free_bytes * 0.9


def test_ntfs3g_has_no_layout_facts_and_says_so(mounted_fs) -> None:
    """ntfs-3g runs through FUSE, which has no FIEMAP: the layout facts say 'not available
    on ntfs-3g (FUSE)' instead of failing or counting 0 free extents."""
    from fslab.fragmentation import NoFiemap

    with mounted_fs("ntfs", size="128MiB") as (_, mnt):
        (mnt / "f").write_bytes(os.urandom(1 << 20))
        sync_filesystem(mnt)
        with pytest.raises(NoFiemap, match=r"not available on ntfs-3g \(FUSE\)"):
            file_extents(mnt / "f")
        layout = summarize_layout(mnt).as_dict()
        assert layout["files"] == 1 and layout["layout_score"] is None
        assert "ntfs-3g (FUSE)" in str(layout["unavailable"])
        hist = free_space_histogram(mnt)
        assert not hist.available and "not available on ntfs-3g (FUSE)" in hist.note
        assert hist.as_dict()["free_extents"] is None


def test_fat_free_space_from_its_allocation_table(tmp_path: Path) -> None:
    """A FAT32 image (made by mkfs.vfat, written through fusefat since this host kernel
    has no vfat): three 1 MiB files, the middle one deleted, leave exactly one 1 MiB hole
    before the free tail, read from the FAT itself."""
    import shutil
    import subprocess

    from fslab.fragmentation import fat_free_space

    if shutil.which("fusefat") is None or shutil.which("mkfs.vfat") is None or not Path("/dev/fuse").exists():
        pytest.skip("needs fusefat, dosfstools and /dev/fuse")
    image, mnt = tmp_path / "fat.img", tmp_path / "m"
    mnt.mkdir()
    with open(image, "wb") as f:
        f.truncate(64 << 20)
    subprocess.run(["mkfs.vfat", "-F", "32", str(image)], check=True, capture_output=True)
    fresh = fat_free_space(str(image))
    assert fresh.method == "FAT" and fresh.free_extents == 1
    subprocess.run(["fusefat", "-o", "rw+", str(image), str(mnt)], check=True, capture_output=True)
    try:
        for i in (1, 2, 3):
            (mnt / f"f{i}").write_bytes(os.urandom(1 << 20))
        (mnt / "f2").unlink()
    finally:
        subprocess.run(["fusermount", "-u", str(mnt)], check=True)
    h = fat_free_space(str(image))
    assert h.free_extents == 2 and h.buckets[1 << 20] == (1, 1 << 20)
    assert h.free_bytes == fresh.free_bytes - (2 << 20)


@pytest.mark.parametrize(("width", "mask"), [(2, 0xFFFF), (4, 0x0FFFFFFF)])
def test_fat_free_runs_match_an_entry_by_entry_count(width: int, mask: int) -> None:
    """The whole-table lane arithmetic finds the same runs of free entries as a loop over
    them, with the values at each lane's edges (the top bit alone, all bits, the bits
    FAT32 reserves, which do not make an entry used) and runs at both ends."""
    import random

    from fslab.fragmentation import _free_runs

    rng = random.Random(5)
    edge = [0, 1, mask, 1 << (8 * width - 1), (1 << 8 * width) - 1, (1 << 8 * width) - 1 - mask]
    for trial in range(200):
        n = rng.randint(1, 3000)
        free_share = rng.random()
        values = [0 if rng.random() < free_share else rng.choice(edge + [rng.getrandbits(8 * width)])
                  for _ in range(n)]
        table = b"".join(v.to_bytes(width, "little") for v in values)
        expected, run = [], 0
        for v in values:
            if v & mask == 0:
                run += 1
            elif run:
                expected.append(run)
                run = 0
        if run:
            expected.append(run)
        assert _free_runs(table, width, mask) == expected, trial


@pytest.mark.parametrize(("fat", "size"), [("12", 4 << 20), ("16", 32 << 20)])
def test_fat12_and_fat16_free_space_is_every_cluster_fsck_counts_free(tmp_path: Path, fat: str, size: int) -> None:
    """A fresh FAT12 and FAT16 (their root directory lies outside the data area): one free
    extent holding every cluster fsck.fat counts free, so the table is read from entry 2
    to the last cluster's, no reserved entry and none past the end."""
    import re
    import shutil
    import struct
    import subprocess

    from fslab.fragmentation import fat_free_space

    if shutil.which("mkfs.vfat") is None or shutil.which("fsck.fat") is None:
        pytest.skip("needs dosfstools")
    image = tmp_path / "fat.img"
    with open(image, "wb") as f:
        f.truncate(size)
    subprocess.run(["mkfs.vfat", "-F", fat, str(image)], check=True, capture_output=True)
    used, total = map(int, re.search(r"(\d+)/(\d+) clusters", subprocess.run(
        ["fsck.fat", "-n", str(image)], capture_output=True, text=True).stdout).groups())
    sector, per_cluster = struct.unpack_from("<HB", image.read_bytes()[:512], 11)
    h = fat_free_space(str(image))
    assert h.free_extents == 1 and h.free_bytes == (total - used) * sector * per_cluster
