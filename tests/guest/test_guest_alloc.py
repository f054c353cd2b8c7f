"""Seed 003 in the guest: in-kernel vfat (FAT32) aged to 50% by statfs within ±2% once,
as a job of the guest that then runs the repetitions, and copied onto its disk for each
repetition (identical start), then
the alloc workload, every operation with positive latencies; layout facts by FIBMAP and
free space from the FAT. On ntfs-3g (FUSE: no FIEMAP) the alloc workload stores its
latencies and the layout facts say they are not available rather than failing or
counting 0. (ntfs-3g is left empty here: aging it under TCG takes minutes.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from fslab.backends.guest.build import GuestBuild
from fslab.runner import run_study
from fslab.store import Store

pytestmark = pytest.mark.guest

OPS = ("null", "seq_read", "rand_read", "delete", "seq_write", "rand_write")
COUNT = 20  # operations of each kind: enough for a mean and a median, quick under TCG

STUDY = """
[study]
name = "alloc aged in the guest"
repetitions = {reps}
order = "in-order"

[device]
size = "{size}"

{filesystem}

[[workloads]]
kind = "alloc"
name = "alloc"
count = {count}
{aging}
"""
AGING = 'aging = { fill = 0.5, pattern = "random-holes", seed = 3, file_sizes = "lognormal:64KiB:1.5" }'


def test_vfat_aged_to_half_and_ntfs_then_alloc_in_the_guest(guest_build: GuestBuild, tmp_path: Path) -> None:
    results = tmp_path / "results"
    # FAT32 at 64 MiB still has twice the clusters it needs (512-byte clusters); half the
    # device is half the aging writes, which under TCG are most of this test.
    for name, fs, aging, reps, size in (("fat", '[filesystems.fat32]\ntype = "vfat"', AGING, 2, "64MiB"),
                                        ("ntfs", '[filesystems.ntfs]\nbackend = "guest"', "", 1, "128MiB")):
        study = tmp_path / f"{name}.toml"
        study.write_text(STUDY.format(filesystem=fs, aging=aging, reps=reps, count=COUNT, size=size))
        assert run_study(str(study), results_dir=results / name).runs_failed == 0
    runs = {}
    for name in ("fat", "ntfs"):
        with Store(results / name, read_only=True) as store:
            stored = sorted(store.runs(1), key=lambda r: r["repetition"])
            runs.update({r["cell"]["filesystem"]: r for r in stored[:1]})
            if name == "fat":
                # Aged once, copied for each repetition: the same state.
                first, second = (r["provenance"] for r in stored)
                # One boot: the aging job, then each repetition's job on its copy.
                assert first["guest"]["boot_s"] == second["guest"]["boot_s"]
                assert (first["guest"]["jobs_before_in_boot"], second["guest"]["jobs_before_in_boot"]) == (1, 2)
                assert (first["aged_image_cache_hit"], second["aged_image_cache_hit"]) == (False, True)
                assert first["aged_image_make_s"] > 0 and second["aged_image_make_s"] == 0
                assert first["aged_image"] == second["aged_image"]
                assert first["aging"]["file_set_sha256"] == second["aging"]["file_set_sha256"]
                assert first["free_space_before"] == second["free_space_before"]
    for fs in ("fat32", "ntfs"):
        run = runs[fs]
        assert run["cell"]["backend"] == "guest"
        m = {k: v["value"] for k, v in run["metrics"].items()}
        if fs == "fat32":
            assert abs(m["aging_data_fraction"] - 0.5) <= 0.02, m["aging_data_fraction"]  # of the disk's bytes
        for op in OPS:
            assert m[f"{op}_samples_count"] == COUNT, (fs, op)
            assert m[f"{op}_lat_mean_ns"] > 0 and m[f"{op}_lat_p50_ns"] > 0, (fs, op)
        # allocation+write with an fsync each costs more than the empty timing loop
        assert m["seq_write_lat_mean_ns"] > 10 * m["null_lat_mean_ns"], fs
    fat, ntfs = runs["fat32"], runs["ntfs"]
    assert fat["provenance"]["filesystem"]["mounted_as"] == "vfat"
    fat_m = {k: v["value"] for k, v in fat["metrics"].items()}
    assert 0 < fat_m["aging_layout_score"] <= 1 and fat_m["free_space_before_free_extents_count"] > 0
    assert fat_m["seq_write_fragments_count"] >= 1
    assert fat["provenance"]["free_space_before"]["method"] == "FAT"
    # the FAT's free extents hold what statfs calls free, to the cluster
    before = fat["provenance"]["free_space_before"]
    assert before["free_bytes"] > 0 and fat["provenance"]["aging"]["layout"]["fragments_per_file_mean"] >= 1
    ntfs_m = {k: v["value"] for k, v in ntfs["metrics"].items()}
    assert "seq_write_fragments_count" not in ntfs_m and "free_space_before_free_extents_count" not in ntfs_m
    assert "not available on ntfs-3g (FUSE)" in ntfs["provenance"]["free_space_before"]["note"]
    assert "not available on ntfs-3g (FUSE)" in ntfs["provenance"]["tool_info"]["fragments"]


USB = """
[study]
name = "alloc on the usb-flash profile"
repetitions = 1
backend = "guest"
trace = true

[device]
kind = "emulated"
profile = "usb-flash"
size = "128MiB"

[filesystems.fat32]
type = "vfat"

[[workloads]]
kind = "alloc"
name = "alloc"
count = 20
"""


def test_usb_flash_profile_slows_each_write_and_read(guest_build: GuestBuild, tmp_path: Path) -> None:
    """dm-delay with the profile's delays: every 4 KiB write with its fsync waits at least
    the 13 ms write delay, and every random read at least the 1 ms read delay (it comes
    from the device, not from the page cache the sequential read filled); the device facts
    name the profile."""
    study = tmp_path / "usb.toml"
    study.write_text(USB)
    assert run_study(str(study), results_dir=tmp_path / "r").runs_failed == 0
    with Store(tmp_path / "r", read_only=True) as store:
        [run] = store.runs(1)
    m = {k: v["value"] for k, v in run["metrics"].items()}
    device = run["provenance"]["device"]
    assert device["profile"] == "usb-flash" and device["write_delay_ms"] == 13.0
    assert " 13" in device["table"] and device["rotational"] == "0"
    assert m["seq_write_lat_p50_ns"] >= 13e6 and m["rand_write_lat_p50_ns"] >= 13e6
    assert m["rand_read_lat_p50_ns"] >= 1e6, m["rand_read_lat_p50_ns"]
    assert m["null_lat_mean_ns"] < 1e6
    # dm-delay is bio-based: the requests, the trace and the counters are the lower disk's
    # (the trace of the mapping itself held none).
    assert m["trace_write_requests_count"] >= 20, m.get("trace_write_requests_count")
    assert m["trace_write_requests_count"] == m["device_write_requests_count"]
    assert m["trace_read_requests_count"] == m["device_read_requests_count"]
