"""`fslab doctor`: which tools and kernel features are present, and for each missing one
the command that installs or enables it. The tools are those the plug-ins declare."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .cgroups import detect_version
from .check import Check
from .commands import TOOLS
from .filesystems import FILESYSTEMS


def _kernel_filesystems() -> set[str]:
    try:
        return {line.split()[-1] for line in Path("/proc/filesystems").read_text().splitlines()}
    except OSError:
        return set()


def _md_checks() -> list[Check]:
    """md per RAID level: where this kernel has it arrays are built on the host, else in
    the guest (whose kernel has md), so its absence is no failure."""
    from .devices.md_kernel import PERSONALITIES, host_md

    checks = []
    for level, (_, module) in PERSONALITIES.items():
        probe = host_md(level)
        where = "arrays run on the host" if probe.available else "arrays run in the guest"
        checks.append(Check(f"kernel: md {module}", True, f"{probe.finding}: {where}", "",
                            f"RAID{level} devices on the host, else in the guest"))
    return checks


def run_checks() -> list[Check]:
    # Listing the registries loads every plug-in, and each declares its tools.
    import fslab.backends  # noqa: F401
    from fslab.devices import DEVICES
    from fslab.workloads import WORKLOADS

    DEVICES.names()
    WORKLOADS.names()

    checks = [Check("root", os.geteuid() == 0, f"uid {os.geteuid()}",
                    "run fslab as root (sudo)", "devices and mounts")]
    for name, tool in sorted(TOOLS.items()):
        path = shutil.which(name)
        checks.append(Check(name, path is not None, path or "not found",
                            f"apt-get install {tool.package}", tool.needed_for))
    kernel = _kernel_filesystems()
    for name, fs in FILESYSTEMS.items():
        kernel_type = fs.kernel_type or fs.kernel_name
        if fs.needs_guest and fs.needs_root:  # the guest runs it where this kernel has it not: not a failure
            where = "this kernel has it: runs on the host" if fs.on_host else "not in this kernel: runs in the guest"
            checks.append(Check(f"kernel: {kernel_type}", True, where, "", f"{name} on the host, else in the guest"))
        elif fs.needs_root:
            in_kernel = kernel_type in kernel
            checks.append(Check(f"kernel: {kernel_type}", in_kernel,
                                "in /proc/filesystems" if in_kernel else "not in this kernel",
                                f"modprobe {kernel_type}", f"{name} on the host"))
    checks += _md_checks()
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
    from .backends.guest.requirements import kernel_check  # the guest's own check

    return [*checks, kernel_check()]
