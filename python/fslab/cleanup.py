"""`fslab cleanup`: release anything an fslab process could not (it was killed with
SIGKILL, or the machine lost power mid-run): mounts, loop devices, images, cgroups and
tracefs instances whose process is gone.
It only touches what fslab made: loop devices backed by ``fslab-*.img`` images, the
mounts on them, and ``fslab-*`` cgroups."""

from __future__ import annotations

import contextlib
from pathlib import Path

from .cgroups import leftover_cgroups, remove_cgroup
from .devices.image import detach, fslab_loop_devices
from .filesystems import unmount


def _mounts_of(device: str) -> list[Path]:
    out = []
    for line in Path("/proc/mounts").read_text().splitlines():
        source, target = line.split()[:2]
        if source == device:
            out.append(Path(target.replace("\\040", " ")))
    return out


def cleanup(dry_run: bool = False) -> list[str]:
    """Release leftovers; returns a line per thing released (or that would be)."""
    done: list[str] = []
    for loop, image in fslab_loop_devices():
        for mountpoint in _mounts_of(loop):
            done.append(f"unmount {mountpoint}")
            if not dry_run:
                unmount(mountpoint)
        done.append(f"detach {loop} ({image})")
        if not dry_run:
            detach(loop)
            with contextlib.suppress(OSError):
                Path(image).unlink()
    if not dry_run:
        from .trace.capture import remove_stale_instances

        done += [f"remove tracefs instance {name}" for name in remove_stale_instances()]
    for cgroup in leftover_cgroups():
        done.append(f"remove cgroup {cgroup}")
        if not dry_run:
            with contextlib.suppress(OSError):
                remove_cgroup(cgroup, attempts=5)
    return done
