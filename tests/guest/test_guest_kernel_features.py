"""Inside one booted guest (stock Debian 6.1 kernel): every file system the host kernel
lacks mounts and runs a real fio job; md RAID0/5 assemble over 8 virtio disks; scsi_debug,
dm-delay and null_blk appear as block devices; tracefs sees block requests."""

from __future__ import annotations

import json
import re
import time

import pytest

from fslab.backends.guest.build import GuestBuild
from fslab.backends.guest.init_script import AGENT_BEAT_S, ALIVE_FILE
from fslab.backends.guest.launcher import GiB, Guest, agent_mark

from .conftest import REFUSING_DISK, SCRATCH_DISK, MiB, run_python

pytestmark = pytest.mark.guest

RAID_MEMBERS = 8
CHUNK_BYTES = 512 * 1024


class Booted:
    """The guest and the name each disk got inside it (by its virtio serial)."""

    def __init__(self, guest: Guest, names: dict[str, str]):
        self.guest = guest
        self.names = names

    def sh(self, script: str, timeout_s: float = 120) -> str:
        return self.guest.check_output(["sh", "-ec", script], timeout_s)


@pytest.fixture(scope="module")
def booted(shared_guest: Guest) -> Booted:
    listing = shared_guest.check_output(
        ["sh", "-c", "for d in /sys/block/vd*; do echo ${d##*/} $(cat $d/serial); done"])
    names = {serial: name for name, serial in (line.split() for line in listing.splitlines())}
    # This module's disk0 is the shared guest's 1 GiB disk, disk1-8 its md members and
    # disk9 dm-delay's lower disk (tests/guest/conftest.py).
    order = [SCRATCH_DISK, *range(RAID_MEMBERS), RAID_MEMBERS]
    disks = {f"disk{i}": names[f"fslab-disk{j}"] for i, j in enumerate(order)}
    return Booted(shared_guest, {**disks, "refusing": names[f"fslab-disk{REFUSING_DISK}"]})


REFUSED_WRITE = """
import json, subprocess
from fslab.kernel_log import DiskErrorWatch
with DiskErrorWatch() as watch:
    dd = subprocess.run(["dd", "if=/dev/zero", "of=/dev/{disk}", "bs=1M", "count=48", "oflag=direct"],
                        capture_output=True, text=True)
    print(json.dumps({{"dd_status": dd.returncode, "unavailable": watch.unavailable,
                      "errors": watch.take({{"{disk}"}})}}))
"""


def test_a_write_the_host_refuses_fails_in_the_guest_with_the_hosts_reason(booted: Booted) -> None:
    # The guest's kernel log names the disk (what fails a run there); QEMU's monitor
    # names the host's reason (what the run's error then adds). Not a paused guest.
    disk = booted.names["refusing"]
    out = json.loads(run_python(booted.guest, REFUSED_WRITE.format(disk=disk), 300).strip().splitlines()[-1])
    assert out["dd_status"] != 0 and out["unavailable"] is None
    assert out["errors"] and all(f"error, dev {disk}" in line for line in out["errors"]), out
    # Only this disk's (QEMU names it disk<index>): the shared guest's other tests came first.
    reasons = [r for r in booted.guest.host_io_errors if r.startswith(f"disk{REFUSING_DISK} ")]
    assert reasons and "No space left on device" in reasons[0] and "(QEMU's action: report)" in reasons[0], reasons


def test_guest_runs_the_stock_kernel_with_the_memory_asked_for(booted: Booted,
                                                                guest_build: GuestBuild) -> None:
    assert booted.sh("uname -r").strip() == guest_build.release
    total_kib = int(re.search(r"MemTotal:\s+(\d+) kB", booted.sh("cat /proc/meminfo")).group(1))
    # The kernel keeps some memory for itself; what is left is close to 1 GiB.
    assert 0.85 * GiB < total_kib * 1024 <= 1 * GiB
    assert booted.guest.boot_s > 0


MKFS = {
    "ext4": "mkfs.ext4 -F -q {dev}",
    "xfs": "mkfs.xfs -f -q {dev}",
    "btrfs": "mkfs.btrfs -f -q {dev}",
    "f2fs": "mkfs.f2fs -f -q {dev}",
    "jfs": "mkfs.jfs -q {dev}",
    "nilfs2": "mkfs.nilfs2 -f -q {dev}",
    "vfat": "mkfs.vfat -F 32 {dev}",
    "ntfs": "mkntfs -F -Q -q {dev}",
}
MOUNT = {"ntfs": "ntfs-3g {dev} /mnt/t", "vfat": "mount -t vfat {dev} /mnt/t"}
KERNEL_TYPE = {"ntfs": "fuseblk"}


@pytest.mark.parametrize("fs", list(MKFS))
def test_filesystem_mounts_and_runs_fio(booted: Booted, fs: str) -> None:
    dev = f"/dev/{booted.names['disk0']}"
    mount = MOUNT.get(fs, f"mount -t {fs} {{dev}} /mnt/t").format(dev=dev)
    out = booted.sh(f"""
        wipefs -a -q {dev}
        {MKFS[fs].format(dev=dev)} >/dev/null
        mkdir -p /mnt/t
        {mount}
        awk '$2 == "/mnt/t" {{print "TYPE", $3}}' /proc/mounts
        fio --name=guest --directory=/mnt/t --rw=randwrite --bs=4k --size=2m \
            --ioengine=psync --end_fsync=1 --output-format=json > /tmp/fio.json
        umount /mnt/t
        cat /tmp/fio.json
    """, timeout_s=240)
    kind = re.search(r"^TYPE (\S+)$", out, re.M)
    assert kind is not None and kind.group(1) == KERNEL_TYPE.get(fs, fs)
    job = json.loads(out[out.index("{"):])["jobs"][0]
    assert job["write"]["io_bytes"] == 2 << 20 and job["write"]["iops"] > 0


def _members(booted: Booted) -> str:
    return " ".join(f"/dev/{booted.names[f'disk{i}']}" for i in range(1, RAID_MEMBERS + 1))


@pytest.mark.parametrize(("level", "data_disks"), [(5, RAID_MEMBERS - 1), (0, RAID_MEMBERS)])
def test_md_raid_over_eight_disks_reports_its_data_disks(booted: Booted, level: int,
                                                         data_disks: int) -> None:
    out = booted.sh(f"""
        mdadm --create /dev/md0 --run --quiet --level={level} --raid-devices={RAID_MEMBERS} \
              --chunk={CHUNK_BYTES // 1024} --assume-clean --metadata=1.2 {_members(booted)}
        echo RAID_DISKS $(cat /sys/block/md0/md/raid_disks)
        echo CHUNK $(cat /sys/block/md0/md/chunk_size)
        echo IO_OPT $(cat /sys/block/md0/queue/optimal_io_size)
        echo LEVEL $(cat /sys/block/md0/md/level)
        mdadm --stop /dev/md0 >/dev/null 2>&1
        mdadm --zero-superblock {_members(booted)}
    """)
    facts = dict(line.split() for line in out.splitlines() if line.strip())
    assert facts["LEVEL"] == f"raid{level}"
    assert int(facts["RAID_DISKS"]) == RAID_MEMBERS
    assert int(facts["CHUNK"]) == CHUNK_BYTES
    # md sets the optimal I/O size to a full stripe: chunk x data disks.
    assert int(facts["IO_OPT"]) == CHUNK_BYTES * data_disks


def test_scsi_debug_is_a_rotational_disk_with_delay(booted: Booted) -> None:
    out = booted.sh("""
        modprobe sd_mod
        modprobe scsi_debug dev_size_mb=32 ndelay=2000000
        S=/sys/bus/pseudo/drivers/scsi_debug
        for i in $(seq 50); do ls $S/adapter*/host*/target*/*/block >/dev/null 2>&1 && break; sleep 0.1; done
        name=$(ls $S/adapter*/host*/target*/*/block)
        echo 1 > /sys/block/$name/queue/rotational
        echo NAME $name
        echo MODEL $(cat /sys/block/$name/device/model)
        echo ROTATIONAL $(cat /sys/block/$name/queue/rotational)
        start=$(cut -d' ' -f1 /proc/uptime)
        dd if=/dev/$name of=/dev/null bs=4k count=20 iflag=direct 2>/dev/null
        echo ELAPSED $(awk -v s=$start '{print $1 - s}' /proc/uptime)
        modprobe -r scsi_debug
    """)
    facts = dict(line.split(None, 1) for line in out.splitlines() if line.strip())
    assert facts["NAME"].startswith("sd")
    assert facts["MODEL"] == "scsi_debug"
    assert facts["ROTATIONAL"] == "1"
    assert float(facts["ELAPSED"]) >= 20 * 0.002  # 20 reads, each delayed 2 ms


def test_dm_delay_over_a_disk_delays_reads(booted: Booted) -> None:
    dev = f"/dev/{booted.names[f'disk{RAID_MEMBERS + 1}']}"
    out = booted.sh(f"""
        modprobe dm-delay
        sectors=$(blockdev --getsz {dev})
        echo "0 $sectors delay {dev} 0 20" | dmsetup create fslab-delay
        dmsetup mknodes
        echo SECTORS $(blockdev --getsz /dev/mapper/fslab-delay) $sectors
        start=$(cut -d' ' -f1 /proc/uptime)
        dd if=/dev/mapper/fslab-delay of=/dev/null bs=4k count=10 iflag=direct 2>/dev/null
        echo ELAPSED $(awk -v s=$start '{{print $1 - s}}' /proc/uptime)
        dmsetup remove fslab-delay
    """)
    facts = dict(line.split(None, 1) for line in out.splitlines() if line.strip())
    mapped, underlying = facts["SECTORS"].split()
    assert mapped == underlying and int(mapped) == 64 * MiB // 512
    assert float(facts["ELAPSED"]) >= 10 * 0.020  # 10 reads, each delayed 20 ms


def test_null_blk_appears_as_a_block_device(booted: Booted) -> None:
    out = booted.sh("""
        modprobe null_blk nr_devices=1 gb=1
        echo SIZE $(blockdev --getsize64 /dev/nullb0)
        modprobe -r null_blk
    """)
    assert out.split() == ["SIZE", str(1 * GiB)]


def test_tracefs_sees_block_requests_in_the_guest(booted: Booted) -> None:
    name = booted.names["disk0"]
    out = booted.sh(f"""
        T=/sys/kernel/tracing/instances/fslab-test
        mkdir $T
        dev=$(cat /sys/block/{name}/dev)
        echo "dev == $(( ${{dev%:*}} << 20 | ${{dev#*:}} ))" > $T/events/block/block_rq_issue/filter
        echo 1 > $T/events/block/block_rq_issue/enable
        dd if=/dev/{name} of=/dev/null bs=4k count=16 iflag=direct 2>/dev/null
        echo 0 > $T/events/block/block_rq_issue/enable
        cat $T/trace
        rmdir $T
    """)
    issues = [line for line in out.splitlines() if "block_rq_issue:" in line]
    assert len(issues) >= 16
    rwbs = [re.search(r"block_rq_issue: \d+,\d+ (\S+) ", line) for line in issues]
    assert all(m is not None and m.group(1).startswith("R") for m in rwbs), issues[:3]


def test_an_idle_guest_starts_no_processes_and_its_agent_marks_it_alive(booted: Booted) -> None:
    """Between the host's commands the agent waits without starting a process (a `usleep`
    per look started 50 a second, each a fork and exec emulated under TCG): the kernel's
    last PID moves only by the commands' own few processes over 6 s of idling. Meanwhile
    it marks the guest alive every AGENT_BEAT_S of its uptime (what the host's frozen-guest
    check reads), with builtins too."""
    def last_pid() -> int:
        return int(booted.sh("cat /proc/loadavg").split()[-1])

    def mark() -> int:  # the guest's uptime at its last mark (read again if caught mid-write)
        for _ in range(50):
            if text := (booted.guest.control_folder / ALIVE_FILE).read_text().strip():
                return int(text)
            time.sleep(0.01)
        raise AssertionError("the alive mark stayed empty")

    first, marked, stamped = last_pid(), mark(), agent_mark(booted.guest.control_folder)
    time.sleep(AGENT_BEAT_S + 1)
    assert last_pid() - first < 30
    assert mark() >= marked + AGENT_BEAT_S  # guest uptime, whole seconds
    assert agent_mark(booted.guest.control_folder) != stamped
