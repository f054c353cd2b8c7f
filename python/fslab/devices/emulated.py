"""Emulated slow devices inside the guest, so a file system meets real device latency in
the kernel (plugging, merging, writeback) rather than RAM speed. Registered as the device
kind ``emulated``, which only the guest backend can provide (``needs_guest``).

- ``scsi_debug``: a RAM-backed SCSI disk (sd_mod must be loaded first) answering every
  command after ``delay_ms``; marked rotational through sysfs (scsi_debug itself reports
  a non-rotational device). Its data lives in guest memory: size counts against it.
- ``dm-delay``: a device-mapper target delaying every request to the guest's first
  virtio disk by ``delay_ms``. Without udev, ``dmsetup mknodes`` makes /dev/mapper/NAME.
- ``null_blk``: memory-backed, completing after ``delay_ms`` through its timer mode.

Named profiles fill these fields for a device class (``profile = "usb-flash"``); fields
given beside a profile override it. See fslab.devices.sections.PROFILES for what each is and is not.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..commands import run_command
from ..datarecords import replace
from ..errors import FslabError
from ..signals import shielded
from . import NO_GRANT, DeviceHandle, DeviceKind, Grant, handle_for, queue_facts, register_device_kind
from .guest_disks import take

TOOLS = {"dmsetup": "dmsetup", "modprobe": "kmod", "blockdev": "util-linux"}
MiB = 1 << 20
GiB = 1 << 30

if TYPE_CHECKING:
    from .sections import EmulatedSection




def _wait_for(path: Path, limit_s: float = 10.0) -> None:
    deadline = time.monotonic() + limit_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise FslabError(f"{path} did not appear within {limit_s:.0f} s")
        time.sleep(0.05)


def _set_rotational(name: str, rotational: bool) -> None:
    Path(f"/sys/block/{name}/queue/rotational").write_text("1" if rotational else "0")


def _scsi_debug_disk() -> str:
    adapters = Path("/sys/bus/pseudo/drivers/scsi_debug")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = sorted(adapters.glob("adapter*/host*/target*/*/block/*"))
        if found:
            return found[0].name
        time.sleep(0.05)
    raise FslabError("scsi_debug loaded but no disk appeared within 10 s")


@contextlib.contextmanager
def _scsi_debug(section: EmulatedSection) -> Iterator[tuple[str, dict[str, Any]]]:
    if Path("/sys/module/scsi_debug").exists():
        raise FslabError("scsi_debug is already loaded: one emulated scsi_debug disk at a time")
    run_command(["modprobe", "sd_mod"], timeout=60)
    params = [f"dev_size_mb={section.size // MiB}", f"ndelay={int(section.delay_ms * 1e6)}"]
    with shielded():
        run_command(["modprobe", "scsi_debug", *params], timeout=60)
    try:
        name = _scsi_debug_disk()
        _wait_for(Path(f"/dev/{name}"))
        _set_rotational(name, section.rotational)
        yield f"/dev/{name}", {"module_params": params}
    finally:
        with shielded():
            run_command(["modprobe", "-r", "scsi_debug"], timeout=60, check=False)


@contextlib.contextmanager
def _dm_delay(section: EmulatedSection, tag: str, lower: str | None) -> Iterator[tuple[str, dict[str, Any]]]:
    lower = lower or take(1)[0]
    run_command(["modprobe", "dm-delay"], timeout=60)
    sectors = int(run_command(["blockdev", "--getsz", lower], timeout=30).stdout)
    name = f"fslab-{tag}"
    table = f"0 {sectors} delay {lower} 0 {int(round(section.delay_ms))}"
    if section.write_delay_ms is not None:  # reads, then writes (flushes follow the writes)
        table += f" {lower} 0 {int(round(section.write_delay_ms))}"
    created = False
    try:
        with shielded():
            run_command(["dmsetup", "create", name], input_text=table + "\n", timeout=60)
            created = True
        run_command(["dmsetup", "mknodes", name], timeout=60)
        path = f"/dev/mapper/{name}"
        _wait_for(Path(path))
        _set_rotational(handle_for(path).sysfs_name, section.rotational)
        yield path, {"table": table, "lower": lower, "lower_queue": queue_facts(Path(lower).name)}
    finally:
        with shielded():
            if created:
                run_command(["dmsetup", "remove", "--retry", name], timeout=60, check=False)
                # Without udev nothing removes the node: mknodes drops stale ones.
                run_command(["dmsetup", "mknodes"], timeout=60, check=False)


@contextlib.contextmanager
def _null_blk(section: EmulatedSection) -> Iterator[tuple[str, dict[str, Any]]]:
    if Path("/sys/module/null_blk").exists():
        raise FslabError("null_blk is already loaded: one emulated null_blk disk at a time")
    params = ["nr_devices=1", f"gb={section.size // GiB}", "memory_backed=1", "irqmode=2",
              f"completion_nsec={int(section.delay_ms * 1e6)}"]
    with shielded():
        run_command(["modprobe", "null_blk", *params], timeout=60)
    try:
        _wait_for(Path("/dev/nullb0"))
        _set_rotational("nullb0", section.rotational)
        yield "/dev/nullb0", {"module_params": params}
    finally:
        with shielded():
            run_command(["modprobe", "-r", "null_blk"], timeout=60, check=False)


@contextlib.contextmanager
def provision(section: EmulatedSection, workdir: Path, tag: str, grant: Grant = NO_GRANT,
              lower: str | None = None) -> Iterator[DeviceHandle]:
    """The emulated device, released (module unloaded, mapping removed) on the way out."""
    if section.model == "scsi_debug":
        made = _scsi_debug(section)
    elif section.model == "dm-delay":
        made = _dm_delay(section, tag, lower)
    else:
        made = _null_blk(section)
    with made as (path, extra):
        handle = handle_for(path)
        facts = {"kind": "emulated", "model": section.model, "delay_ms": section.delay_ms,
                 "write_delay_ms": section.write_delay_ms, "profile": section.profile,
                 **extra, **queue_facts(handle.sysfs_name)}
        lower_disk = handle_for(extra["lower"]) if "lower" in extra else None
        yield replace(handle, facts=facts, requests_on=lower_disk)


register_device_kind(DeviceKind(
    "emulated", "EmulatedSection", provision, tools=TOOLS, needs_guest=True, description=__doc__ or "",
    capacity=lambda section: section.size,
    # dm-delay sits on a virtio disk; scsi_debug and null_blk are made by the guest kernel
    guest_disks=lambda section: [section.size] if section.model == "dm-delay" else [],
    guest_section=lambda section: {"kind": "emulated", **section.model_dump()},
))
