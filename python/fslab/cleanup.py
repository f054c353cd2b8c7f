"""`fslab cleanup`: release what an fslab process could not (it was killed with SIGKILL,
or the machine lost power mid-run). Every resource fslab creates is written down in its
process's state file first (fslab.resources); cleanup releases exactly what the state
files of dead processes list — mounts (killing the workloads orphaned on them), md
arrays, loop devices, images, tracefs instances, cgroups and guest processes — newest first, and
never anything of a process that is still alive."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
from pathlib import Path

from .cgroups import remove_cgroup
from .devices.image import detach, loops_backed_by
from .errors import FslabError
from .filesystems import unmount
from .mounts import mount_at, mount_table, mounts_of_source
from .resources import Leftover, Resource, leftovers


def _kill_users(mountpoint: Path) -> list[int]:
    """SIGKILL processes with a file, cwd or root below a mount point. Only called for
    mounts fslab made, whose users are workloads orphaned by a killed fslab."""
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


def _moved(path: Path) -> Path:
    """Where a listed mount point is now: its name (``mnt-<pid>-<id>``) is unique, so a
    mount whose folder was renamed or moved since is still found."""
    if mount_at(path) is not None:
        return path
    for entry in mount_table():
        if entry.target.name == path.name:
            return entry.target
    return path


def _release_mount(target: Path, dry_run: bool) -> list[str]:
    done = []
    target = _moved(target)
    if mount_at(target) is not None:
        done.append(f"unmount {target}")
        if not dry_run:
            killed = _kill_users(target)
            if killed:
                done.append(f"killed orphaned processes using it: {killed}")
            unmount(target)
    elif target.is_dir() and not dry_run:
        with contextlib.suppress(OSError):
            target.rmdir()
    return done


def _release(resource: Resource, dry_run: bool) -> list[str]:
    """Release one listed resource; a line per thing done (or that would be)."""
    kind, ident = resource.kind, resource.ident
    done: list[str] = []
    if kind == "mount":
        done += _release_mount(Path(ident), dry_run)
    elif kind == "image":
        # by the image's unique name, so an image whose folder was renamed is found too
        for loop in loops_backed_by(ident, by_name=True):
            for entry in mounts_of_source(loop):
                done += _release_mount(entry.target, dry_run)
            done.append(f"detach {loop} ({ident})")
            if not dry_run:
                detach(loop)
        if Path(ident).exists():
            done.append(f"remove image {ident}")
            if not dry_run:
                Path(ident).unlink(missing_ok=True)
    elif kind == "tracefs":
        if Path(ident).exists():
            done.append(f"remove tracefs instance {Path(ident).name}")
            if not dry_run:
                from .trace.capture import remove_instance

                remove_instance(Path(ident))
    elif kind == "cgroup":
        if Path(ident).exists():
            done.append(f"remove cgroup {ident}")
            if not dry_run:
                _kill_cgroup(Path(ident))
                remove_cgroup(Path(ident), attempts=20)
    elif kind == "md":  # an array of a job on the host: stopped before its members' images go
        from .devices.raid import release_left

        info = resource.info or {}
        done += release_left(ident, str(info.get("name", "")), list(info.get("members", [])), dry_run)
    elif kind == "guests":  # a folder of guests' run folders: their QEMU and control shares
        from .backends.guest.reaper import cleanup_guests

        done += cleanup_guests(under=Path(ident), dry_run=dry_run)
    elif kind == "directory":
        if Path(ident).is_dir():
            done.append(f"remove {ident}")
            if not dry_run:
                import shutil

                shutil.rmtree(ident, ignore_errors=True)
    return done


def _kill_cgroup(path: Path) -> None:
    with contextlib.suppress(OSError):
        for pid in (path / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):
                os.kill(int(pid), signal.SIGKILL)


def cleanup(dry_run: bool = False, under: Path | None = None) -> list[str]:
    """Release what dead fslab processes left; returns a line per thing released (or
    that would be). With ``under``, only resources below that folder. A live study's
    resources are never touched nor listed; the lines say which studies are still live."""
    done: list[str] = []
    dead, live = leftovers(under)
    for leftover in dead:
        done += _release_leftover(leftover, dry_run)
    if not dry_run and under is None:
        # Any dead fslab process's instance, registered or not (bench/ makes unregistered
        # ones). With ``under``, only those registered below it (above): a sweep of the
        # whole machine took another study's, whose own cleanup then had nothing to say.
        from .trace.capture import remove_stale_instances

        done += [f"remove tracefs instance {name}" for name in remove_stale_instances()]
    if under is None:  # guests started by `fslab guest` or tests, in the cache's run folder
        from .backends.guest.reaper import cleanup_guests

        done += [line for line in cleanup_guests(dry_run=dry_run) if not line.startswith("leave ")]
    done += [f"leave the resources of fslab process {pid}: it is still running" for pid in live]
    return list(dict.fromkeys(done))  # a dry run meets a mount twice: as itself and on its loop


def release_before_start(under: Path) -> list[str]:
    """Before a study starts in ``under`` (its results directory or a worker's scratch):
    release what dead fslab processes left there (mounts, loop devices, images, cgroups,
    traces, guests; the processes still working on a mount are killed first), and return
    a line per thing released. Raises FslabError when a live fslab process still holds
    something there: measuring beside it would measure both."""
    dead, live = leftovers(under)
    if live:
        pids = ", ".join(str(p) for p in live)
        raise FslabError(f"fslab process {pids} is still running and holds resources in {under} (a job "
                         f"of an earlier run?): stop it (`kill {pids}`) and start again; "
                         f"`fslab cleanup --under {shlex.quote(str(under))} --dry-run` lists what it holds")
    done: list[str] = []
    for leftover in dead:
        done += [f"{line} (left by fslab process {leftover.pid}, which died)"
                 for line in _release_leftover(leftover, dry_run=False)]
    return done


def _release_leftover(leftover: Leftover, dry_run: bool) -> list[str]:
    done: list[str] = []
    failed = False
    for resource in reversed(leftover.resources):
        try:
            done += _release(resource, dry_run)
        except Exception as exc:  # noqa: BLE001 - report it, release the rest
            failed = True
            done.append(f"could not release {resource.kind} {resource.ident}: {exc}")
    if not dry_run and not failed:
        leftover.path.unlink(missing_ok=True)
    return done
