"""The user's own disks under file systems only a guest has (this host kernel has no md,
f2fs or jfs): f2fs on md RAID5 over four named disks, jfs on one named disk. Loop devices
made here stand in for the disks (the same code path as real ones, checks included):
each is checked and confirmed on the host, handed whole to QEMU as a raw virtio disk,
and left with no md superblock; nothing else of the host is given to the guest."""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path

import pytest

from fslab.backends.guest.build import GuestBuild
from fslab.runner import run_study
from fslab.store import Store

pytestmark = pytest.mark.guest

STUDY = """
[study]
name = "named disks"
backend = "guest"  # the disks are handed to a guest even where this kernel has f2fs and md
repetitions = 1
order = "in-order"
guest_memory = "768MiB"

[device]
{device}

[filesystems.{fs}]

[[workloads]]
kind = "fio"
name = "rand-write-4k"
rw = "randwrite"
bs = "4k"
size = "16M"
direct = 1
runtime = 1
time_based = 1
"""


def _handed(run: dict, paths: list[str]) -> None:
    """Provenance names each disk the guest was given: the loop devices, and only them."""
    disks = run["provenance"]["device"]["host_disks"]
    assert [d["path"] for d in disks] == paths
    for disk in disks:
        assert disk["backing_file"].endswith(".img")  # a loop device: no model or serial
        assert {"rotational", "scheduler", "write_cache"} <= set(disk)


def _no_qemu_left(tmp: Path) -> None:
    found = subprocess.run(["pgrep", "-f", f"qemu-system.*{tmp}"], capture_output=True, text=True).stdout
    assert found.split() == []


def _loops_under(tmp: Path) -> list[str]:
    out = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if str(tmp) in line]


def test_entries_on_their_own_named_disks_in_one_study(guest_build: GuestBuild, loop_device, tmp_path: Path) -> None:
    """Seed 004's layout on the user's disks in one study: jfs on one disk and f2fs on md
    RAID5 over four others, each an entry's own device, each disk confirmed once and
    handed to its own job's guest, the array stopped and every member left with no md
    superblock."""
    with contextlib.ExitStack() as stack:
        disk, *members = [stack.enter_context(loop_device("160MiB")).path for _ in range(5)]
        study = tmp_path / "layout.toml"
        entries = (f'[filesystems.jfs-disk]\ntype = "jfs"\ndevice = {{ kind = "block", path = "{disk}" }}\n'
                   f'[filesystems.f2fs-raid5]\ntype = "f2fs"\ndevice = {{ kind = "raid", level = 5, chunk = "512KiB", '
                   f'members = [{", ".join(repr(m).replace(chr(39), chr(34)) for m in members)}] }}\n')
        study.write_text(STUDY.format(fs="unused", device='size = "64MiB"').replace(
            "[filesystems.unused]\n", entries))
        outcome = run_study(str(study), results_dir=tmp_path / "results", allowed_devices=frozenset([disk, *members]))
        with Store(tmp_path / "results") as store:
            runs = {r["cell"]["filesystem"]: r for r in store.runs(store.study().id)}
        assert outcome.runs_failed == 0, [r["error"] for r in runs.values()]
        assert runs["jfs-disk"]["provenance"]["device"]["kind"] == "vdisk"  # the disk itself, whole, in the guest
        for run in runs.values():
            assert run["cell"]["backend"] == "guest" and run["metrics"]["write_iops"]["value"] > 0
        assert runs["jfs-disk"]["provenance"]["filesystem"]["mounted_as"] == "jfs"
        assert runs["f2fs-raid5"]["provenance"]["filesystem"]["mounted_as"] == "f2fs"
        _handed(runs["jfs-disk"], [disk])
        blkid = subprocess.run(["blkid", "-p", "-o", "value", "-s", "TYPE", disk], capture_output=True, text=True)
        assert blkid.stdout.strip() == "jfs"  # made on the named disk itself
        array = runs["f2fs-raid5"]["provenance"]["device"]
        assert array["kind"] == "raid" and array["level"] == 5 and array["data_disks"] == 3
        assert [m["serial"] for m in array["members"]] == [f"fslab-disk{i}" for i in range(4)]
        _handed(runs["f2fs-raid5"], members)
        for path in members:  # the array stopped in the guest, every member's superblock wiped
            examine = subprocess.run(["mdadm", "--examine", path], capture_output=True, text=True)
            assert examine.returncode != 0 and "No md superblock" in examine.stderr, examine.stdout
        _no_qemu_left(tmp_path)
    assert _loops_under(tmp_path) == []
