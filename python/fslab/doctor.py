"""`fslab doctor`: which tools and kernel features are present, and for each missing one
the command that installs or enables it."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from .cgroups import detect_version
from .commands import PACKAGE_OF
from .filesystems import FILESYSTEMS


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str | None = None
    needed_for: str = ""


TOOLS = {
    "fio": "fio workloads",
    "bonnie++": "Bonnie++ workloads",
    "losetup": "image devices",
    "blkid": "block-device safety checks",
    "dumpe2fs": "ext2/3/4 provenance",
    "xfs_info": "xfs provenance",
    "btrfs": "btrfs provenance",
    "qemu-system-x86_64": "the guest backend (jfs, f2fs, nilfs2, vfat, md RAID)",
}


def _kernel_filesystems() -> set[str]:
    try:
        return {line.split()[-1] for line in Path("/proc/filesystems").read_text().splitlines()}
    except OSError:
        return set()


def run_checks() -> list[Check]:
    checks = [Check("root", os.geteuid() == 0, f"uid {os.geteuid()}",
                    "run fslab as root (sudo)", "devices and mounts")]
    for tool, purpose in TOOLS.items():
        path = shutil.which(tool)
        package = PACKAGE_OF.get(tool)
        checks.append(Check(tool, path is not None, path or "not found",
                            f"apt-get install {package}" if package else None, purpose))
    kernel = _kernel_filesystems()
    for name, fs in FILESYSTEMS.items():
        tool = shutil.which(fs.mkfs_tool)
        package = PACKAGE_OF.get(fs.mkfs_tool)
        checks.append(Check(fs.mkfs_tool, tool is not None, tool or "not found",
                            f"apt-get install {package}" if package else None, f"{name} file systems"))
        if not fs.needs_guest:
            in_kernel = fs.kernel_name in kernel
            checks.append(Check(f"kernel: {fs.kernel_name}", in_kernel,
                                "in /proc/filesystems" if in_kernel else "not in this kernel",
                                f"modprobe {fs.kernel_name}", f"{name} on the host"))
    checks.append(Check("kernel: loop", Path("/dev/loop-control").exists(),
                        "/dev/loop-control", "modprobe loop", "image devices"))
    tracefs = Path("/sys/kernel/tracing/events/block")
    checks.append(Check("kernel: tracefs block events", tracefs.exists(), str(tracefs),
                        "mount -t tracefs nodev /sys/kernel/tracing", "block-layer tracing"))
    version = detect_version()
    checks.append(Check("cgroup memory controller", version is not None,
                        f"cgroup v{version}" if version else "not available",
                        "mount the v1 memory controller or enable 'memory' in cgroup v2",
                        "memory-limited workloads (Bonnie++, buffered I/O studies)"))
    drop = Path("/proc/sys/vm/drop_caches")
    checks.append(Check("drop_caches", os.access(drop, os.W_OK), str(drop),
                        "run as root", "cold-cache runs"))
    return checks
