"""`fslab cleanup`: release anything an fslab process could not (it was killed with
SIGKILL, or the machine lost power mid-run): mounts, loop devices, images, cgroups and
tracefs instances whose process is gone.
It only touches what fslab made: loop devices backed by ``fslab-*.img`` images, the
mounts on them, and ``fslab-*`` cgroups."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

from .cgroups import leftover_cgroups, remove_cgroup
from .devices.image import detach, fslab_loop_devices, owner_pid
from .filesystems import unmount
from .mounts import mounts_of_source


def _mounts_of(device: str) -> list[Path]:
    return [entry.target for entry in mounts_of_source(device)]


def _kill_users(mountpoint: Path) -> list[int]:
    """SIGKILL processes with a file, cwd or root below a mount point. Only called for
    mounts on fslab's own images, whose users are workloads orphaned by a killed fslab."""
    prefix = str(mountpoint).rstrip("/")
    killed = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            links = [proc / "cwd", proc / "root", *(proc / "fd").iterdir()]
            targets = [os.readlink(link) for link in links]
        except OSError:
            continue
        if any(t == prefix or t.startswith(prefix + "/") for t in targets):
            with contextlib.suppress(OSError):
                os.kill(int(proc.name), signal.SIGKILL)
                killed.append(int(proc.name))
    return killed


def cleanup(dry_run: bool = False, under: Path | None = None) -> list[str]:
    """Release leftovers; returns a line per thing released (or that would be).
    With ``under``, only loop devices whose image lies below that folder (and their
    mounts) are touched, so one user's cleanup cannot disturb another's running study."""
    done: list[str] = []
    prefix = str(under.resolve()).rstrip("/") + "/" if under is not None else None
    for loop, image in fslab_loop_devices():
        if prefix is not None and not image.startswith(prefix):
            continue
        owner = owner_pid(image)
        if owner is not None and owner != os.getpid() and Path(f"/proc/{owner}").exists():
            done.append(f"leave {loop} ({image}): its study is still running (pid {owner})")
            continue
        for mountpoint in _mounts_of(loop):
            done.append(f"unmount {mountpoint}")
            if not dry_run:
                killed = _kill_users(mountpoint)
                if killed:
                    done.append(f"killed orphaned processes using it: {killed}")
                unmount(mountpoint)
        done.append(f"detach {loop} ({image})")
        if not dry_run:
            detach(loop)
            with contextlib.suppress(OSError):
                Path(image).unlink()
    if under is not None:
        return done  # instances and cgroups are not tied to a folder: only a full cleanup
    if not dry_run:
        # Only instances whose creating process is gone.
        from .trace.capture import remove_stale_instances

        done += [f"remove tracefs instance {name}" for name in remove_stale_instances()]
    for cgroup in leftover_cgroups():
        if dry_run:
            done.append(f"remove cgroup {cgroup}")
            continue
        with contextlib.suppress(OSError):  # a live workload's cgroup cannot be removed
            remove_cgroup(cgroup, attempts=5)
        done.append(f"{'leave' if cgroup.exists() else 'remove'} cgroup {cgroup}")
    return done
