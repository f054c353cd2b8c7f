"""File systems: one registry entry each (mkfs, mount type, what its info tool reports,
the tools it needs, whether it needs a kernel this host lacks). Adding a file system adds
an entry here and its test."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .commands import declare_tools, module_loadable, run_command
from .datarecords import datarecord, field
from .devices import DeviceHandle
from .errors import CommandFailed, FslabError, SpecError
from .mounts import mount_at
from .registry import Registry
from .resources import Resource, register, release
from .signals import shielded

if TYPE_CHECKING:
    from .spec import StudySpec


def _key_value_lines(text: str, sep: str = ":") -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if sep in line:
            key, _, value = line.partition(sep)
            if key.strip() and value.strip():
                out[key.strip()] = value.strip()
    return out


def _ext_info(device: str, mountpoint: str) -> tuple[dict[str, Any], str]:
    text = run_command(["dumpe2fs", "-h", device], timeout=60).stdout
    fields = _key_value_lines(text)
    keep = ("Filesystem features", "Block size", "Inode size", "Inode count", "Block count",
            "Journal size", "Flex block group size", "Default mount options", "Filesystem flags")
    return {k: fields[k] for k in keep if k in fields}, text


def _xfs_info(device: str, mountpoint: str) -> tuple[dict[str, Any], str]:
    text = run_command(["xfs_info", mountpoint], timeout=60).stdout
    info: dict[str, Any] = {}
    for key in ("agcount", "agsize", "bsize", "sectsz", "isize", "crc", "reflink", "sunit",
                "swidth", "log", "blocks"):
        match = re.search(rf"\b{key}=(\S+)", text)
        if match:
            info[key] = match.group(1).rstrip(",")
    return info, text


def _btrfs_info(device: str, mountpoint: str) -> tuple[dict[str, Any], str]:
    text = run_command(["btrfs", "inspect-internal", "dump-super", device], timeout=60).stdout
    usage = run_command(["btrfs", "filesystem", "df", mountpoint], timeout=60, check=False).stdout
    fields = _key_value_lines(text, sep="\t")
    fields.update({k: v for k, v in (l.split(None, 1) for l in text.splitlines() if l.strip()
                                     and len(l.split(None, 1)) == 2)})
    keep = ("sectorsize", "nodesize", "incompat_flags", "compat_ro_flags", "csum_type", "num_devices")
    info = {k: fields[k].strip() for k in keep if k in fields}
    info["profiles"] = " | ".join(l.strip() for l in usage.splitlines() if l.strip())
    return info, text + "\n# btrfs filesystem df\n" + usage


@datarecord(frozen=True)
class FilesystemType:
    """How to make, mount and describe one file system.

    ``default_mkfs`` comes before the user's arguments (so theirs win where the tool
    takes the last value); ``needs_guest``: a stock host kernel here cannot mount it, so it
    runs in the guest unless this host's kernel turns out to have it (``on_host``).
    ``tools``: executables it runs (name -> Debian package), besides mount(8).
    """

    name: str
    mkfs_tool: str
    default_mkfs: tuple[str, ...]
    info: Callable[[str, str], tuple[dict[str, Any], str]] | None = None
    mount_type: str | None = None
    needs_guest: bool = False
    version_argv: tuple[str, ...] = ()
    notes: str = ""
    merged_flags: tuple[str, ...] = ()  # flags whose values combine with the user's
    tools: dict[str, str] = field(default_factory=dict)
    needs_root: bool = True
    # Guest kernel series that have its driver (empty: every one); a kernel given as a
    # path is the user's to vouch for.
    guest_kernels: tuple[str, ...] = ()
    # The kernel's own file-system type, where mount -t names something else (ntfs-3g
    # mounts through FUSE: the kernel needs fuseblk).
    kernel_type: str | None = None
    # The smallest device its mkfs accepts (bytes; 0: none below the image floor), checked
    # before anything is made. Measured on loop devices here (the tools' own messages).
    min_device_bytes: int = 0
    min_device_why: str = ""

    def make(self, device: DeviceHandle, user_args: list[str]) -> str:
        """Make the file system; returns mkfs's output (kept as an artifact)."""
        return mkfs(self, device, user_args)

    def mounted(self, device: DeviceHandle, options: list[str],
                mountpoint: Path) -> contextlib.AbstractContextManager[Mounted]:
        return mounted(self, device, options, mountpoint)

    def mkfs_argv(self, device: str, user_args: list[str]) -> list[str]:
        defaults = list(self.default_mkfs)
        user = list(user_args)
        # mke2fs keeps only the last -E: merge ours into the user's, key by key (theirs win
        # on a conflicting key, a key given by both appears once) instead of losing one.
        for flag in self.merged_flags:
            if flag in defaults and flag in user[:-1]:
                i, j = defaults.index(flag), user.index(flag)
                user[j + 1] = merge_extended_options(defaults[i + 1], user[j + 1])
                del defaults[i:i + 2]
        return [self.mkfs_tool, *defaults, *user, device]

    @property
    def kernel_name(self) -> str:
        return self.mount_type or self.name

    @property
    def on_host(self) -> bool:
        """Whether this host's kernel can mount it: every file system not marked
        ``needs_guest``, and those that are when this kernel has them (a distribution
        kernel usually has f2fs, jfs and nilfs2 as modules: no guest needed there)."""
        return not self.needs_guest or host_kernel_has(self.kernel_type or self.kernel_name)


@functools.cache
def host_kernel_has(kernel_name: str) -> bool:
    """Whether this kernel mounts file systems of type ``kernel_name``: listed in
    /proc/filesystems, or its module is there to load (``modprobe --dry-run``; mount(2)
    loads ``fs-NAME`` itself)."""
    try:
        if kernel_name in {line.split()[-1] for line in Path("/proc/filesystems").read_text().splitlines()}:
            return True
    except OSError:
        return False
    return module_loadable(f"fs-{kernel_name}")


FILESYSTEMS: Registry[FilesystemType] = Registry("file system")
declare_tools({"mount": "mount", "umount": "mount"}, "mounting file systems")


def register_filesystem(fstype: FilesystemType) -> FilesystemType:
    declare_tools(fstype.tools, f"{fstype.name} file systems")
    return FILESYSTEMS.register(fstype.name, fstype)


class DirectoryFilesystem(FilesystemType):
    """No mkfs and no mount: the fake device's directory is the file system (``null``).
    For testing fslab's orchestration without root; it measures nothing real. It adds no
    field, so it is FilesystemType's record as it is (decorated again, it would only
    generate the same methods once more, at every import)."""

    def make(self, device: DeviceHandle, user_args: list[str]) -> str:
        if user_args:
            raise SpecError(f"the {self.name} file system takes no mkfs arguments (given: {user_args})")
        return "no mkfs: the null file system is the device's directory\n"

    @contextlib.contextmanager
    def mounted(self, device: DeviceHandle, options: list[str], mountpoint: Path) -> Iterator[Mounted]:
        if not Path(device.path).is_dir():
            raise FslabError(f"the {self.name} file system needs a directory device (kind = 'fake'), "
                             f"not {device.path}")
        yield Mounted(Path(device.path), ",".join(options), "none")

def merge_extended_options(ours: str, theirs: str) -> str:
    """Two comma-separated option lists (``key=value`` or ``key``) as one: every key once,
    in first-seen order, the value of ``theirs`` where both set it."""
    merged: dict[str, str] = {}
    for text in (ours, theirs):
        for item in filter(None, (part.strip() for part in text.split(","))):
            merged[item.partition("=")[0]] = item
    return ",".join(merged.values())


# ext4/ext3 lazy initialisation writes inode tables in the background for minutes after
# mkfs, which would land inside the first runs' measurements; fslab turns it off.
_EXT_EAGER = ("-E", "lazy_itable_init=0,lazy_journal_init=0")
_args: tuple[str, ...]  # mkfs arguments, in both loops below
for _name, _args in (("ext2", ("-F", "-q")), ("ext3", ("-F", "-q", *_EXT_EAGER)),
                     ("ext4", ("-F", "-q", *_EXT_EAGER))):
    register_filesystem(FilesystemType(
        _name, f"mkfs.{_name}", _args, _ext_info, version_argv=("mkfs.ext4", "-V"),
        merged_flags=("-E",), tools={f"mkfs.{_name}": "e2fsprogs", "dumpe2fs": "e2fsprogs"},
    ))
register_filesystem(FilesystemType(
    "xfs", "mkfs.xfs", ("-f", "-q"), _xfs_info, version_argv=("mkfs.xfs", "-V"),
    tools={"mkfs.xfs": "xfsprogs", "xfs_info": "xfsprogs"},
    # mkfs.xfs 6.1: 299 MiB "Filesystem must be larger than 300MB", 300 MiB made.
    min_device_bytes=300 << 20, min_device_why="mkfs.xfs: 'Filesystem must be larger than 300MB'",
))
register_filesystem(FilesystemType(
    "btrfs", "mkfs.btrfs", ("-f", "-q"), _btrfs_info, version_argv=("mkfs.btrfs", "--version"),
    tools={"mkfs.btrfs": "btrfs-progs", "btrfs": "btrfs-progs"},
    # btrfs-progs 6.2: "minimum size for each btrfs device is 114294784" (109 MiB).
    min_device_bytes=114294784, min_device_why="mkfs.btrfs: 'minimum size for each btrfs device is 114294784'",
))
# These need kernel modules this host lacks; they run on the guest backend (QEMU).
for _name, _tool, _package, _args in (
        ("jfs", "mkfs.jfs", "jfsutils", ("-q",)), ("f2fs", "mkfs.f2fs", "f2fs-tools", ("-f", "-q")),
        ("nilfs2", "mkfs.nilfs2", "nilfs-tools", ("-f", "-q")),
        ("vfat", "mkfs.vfat", "dosfstools", ("-F", "32")),
        ):
    register_filesystem(FilesystemType(_name, _tool, _args, needs_guest=True, tools={_tool: _package}))
# NTFS through ntfs-3g (FUSE), as Fedora 11 ran it for seed 003: FUSE is in this kernel,
# so it runs on the host too (mounted as fuseblk, in provenance); seed-003 puts it in the
# guest beside vfat. Quick mkntfs (-Q) skips zeroing the device.
register_filesystem(FilesystemType("ntfs", "mkfs.ntfs", ("-F", "-Q"), mount_type="ntfs-3g",
                                   tools={"mkfs.ntfs": "ntfs-3g", "ntfs-3g": "ntfs-3g"}, kernel_type="fuseblk"))
# NTFS through the in-kernel ntfs3 driver (5.15+): Debian 12's 6.1 builds it not, 6.12 does.
register_filesystem(FilesystemType("ntfs3", "mkfs.ntfs", ("-F", "-Q"), mount_type="ntfs3", needs_guest=True,
                                   tools={"mkfs.ntfs": "ntfs-3g"}, guest_kernels=("6.12",)))
register_filesystem(DirectoryFilesystem("null", "", (), mount_type="none", needs_root=False))



def names_a_device(argument: str) -> str | None:
    """The device an mkfs or mount argument points at (``/dev/sdb``, ``logdev=/dev/sdb``,
    a path that resolves to a block device), or None. Such arguments are refused: they
    would write to a device the user did not hand over."""
    import os
    import stat as stat_mod

    for part in [argument, *argument.replace(",", "=").split("=")]:
        candidate = part.strip()
        if not candidate:
            continue
        if candidate.startswith("/dev/"):
            return candidate
        if candidate.startswith("/"):
            try:
                if stat_mod.S_ISBLK(os.stat(candidate).st_mode):
                    return candidate
            except OSError:
                pass
    return None


def names_a_path(argument: str) -> str | None:
    """A file an mkfs or mount argument names (absolute, under home, or climbing out with
    ``..``), or None: mkfs and mount run as root, and a path is never the device under test."""
    for part in [argument, *argument.replace(",", "=").split("=")]:
        candidate = part.strip()
        if candidate.startswith(("/", "~")) or ".." in candidate.split("/"):
            return candidate
    return None


def validate_filesystems(spec: StudySpec, source: str) -> None:
    from .spec import GUEST_KERNEL_SERIES  # the study schema: not loaded where jobs run

    for name, section in spec.filesystems.items():
        key = section.type or name
        if key not in FILESYSTEMS:
            field_name = f"filesystems.{name}.type" if section.type else f"filesystems.{name}"
            raise SpecError(
                f"unknown file system {key!r}; known: {', '.join(FILESYSTEMS.names())} "
                "(to label a configuration, name the section freely and set type = 'ext4')",
                source=source, field=field_name,
            )
        for option, values in (("mkfs", section.mkfs), ("mount", section.mount)):
            for i, value in enumerate(values):
                device = names_a_device(value)
                if device:
                    raise SpecError(
                        f"{value!r} names the device {device}: fslab only formats and mounts "
                        "the device under test (mkfs.btrfs would format every device listed; "
                        "logdev=, rtdev= and device= write to others). Use [device] for it.",
                        source=source, field=f"filesystems.{name}.{option}[{i}]",
                    )
                path = names_a_path(value)
                if path:
                    raise SpecError(
                        f"{value!r} names the path {path}: an mkfs or mount argument may not read or write "
                        "files outside the device under test (a file given to mkfs.btrfs is formatted, "
                        "journal_path= and logdev= write to it); remove it",
                        source=source, field=f"filesystems.{name}.{option}[{i}]",
                    )
        if section.kernel is not None and section.requested_backend(spec.study.backend) == "host":
            raise SpecError(
                f"kernel = {section.kernel!r} needs the guest backend (the host runs its own "
                "kernel); remove kernel or set backend = 'guest' for this entry",
                source=source, field=f"filesystems.{name}.kernel",
            )
        fstype = FILESYSTEMS.get(key)
        kernel = section.kernel or spec.study.guest_kernel
        if fstype.guest_kernels and kernel in GUEST_KERNEL_SERIES and kernel not in fstype.guest_kernels:
            where = f"filesystems.{name}.kernel" if section.kernel else "study.guest_kernel"
            raise SpecError(
                f"{key} needs a guest kernel that has its driver ({', '.join(fstype.guest_kernels)}); "
                f"the guest kernel here is {kernel}: set kernel = '{fstype.guest_kernels[0]}' on this entry",
                source=source, field=where,
            )
        if not fstype.on_host and spec.study.backend == "host":
            raise SpecError(
                f"{key} cannot run on this host kernel; set study.backend = 'auto' or 'guest'",
                source=source, field="study.backend",
            )


def mkfs(fstype: FilesystemType, device: DeviceHandle, user_args: list[str]) -> str:
    """Make the file system; returns mkfs's output (kept as an artifact)."""
    done = run_command(fstype.mkfs_argv(device.path, user_args), timeout=600)
    return done.stdout + done.stderr


@datarecord(frozen=True)
class Mounted:
    """A mounted file system: where, and its type and options as the kernel shows them."""

    mountpoint: Path
    options_in_effect: str
    fs_type_in_effect: str


def direct_io_ignored(mounted_as: str, options_in_effect: str) -> str | None:
    """Why O_DIRECT does not bypass the page cache on a file system mounted so, or None.
    ext3/ext4 with data=journal journal every data block, so the kernel serves O_DIRECT
    through the page cache: a direct=1 workload runs buffered there."""
    if mounted_as in ("ext3", "ext4") and "data=journal" in options_in_effect.split(","):
        return (f"direct=1 ran buffered: {mounted_as} mounted with data=journal serves O_DIRECT through the "
                "page cache (every data block is journalled)")
    return None


def mount_options_in_effect(mountpoint: Path) -> tuple[str, str]:
    """(fs type, options) for a mount point, as /proc/mounts shows them."""
    entry = mount_at(mountpoint)
    if entry is None:
        raise FslabError(f"{mountpoint} is not mounted")
    return entry.fs_type, entry.options


@contextlib.contextmanager
def mounted(
    fstype: FilesystemType, device: DeviceHandle, options: list[str], mountpoint: Path
) -> Iterator[Mounted]:
    mountpoint.mkdir(parents=True, exist_ok=True)
    argv = ["mount", "-t", fstype.kernel_name]
    if options:
        argv += ["-o", ",".join(options)]
    token = register(Resource("mount", str(mountpoint), str(mountpoint.parent)))
    try:
        # Shielded: a Ctrl-C that killed mount(8) after mount(2) succeeded would leave a
        # mount nobody knows about; deferred, it arrives inside the try and is undone.
        with shielded():
            run_command([*argv, device.path, str(mountpoint)], timeout=120)
        kind, opts = mount_options_in_effect(mountpoint)
        yield Mounted(mountpoint, opts, kind)
    finally:
        with shielded():
            unmount(mountpoint)
            release(token)


def unmount(mountpoint: Path) -> None:
    """Unmount, retrying while the mount is briefly busy (a process still exiting)."""
    for attempt in range(50):
        try:
            run_command(["umount", str(mountpoint)], timeout=300)
            break
        except CommandFailed as exc:
            if "not mounted" in exc.stderr or "no mount point" in exc.stderr:
                break
            if attempt == 49:
                raise
            time.sleep(0.2)
    with contextlib.suppress(OSError):
        mountpoint.rmdir()


def quiesce(device: DeviceHandle, *, settle_s: float = 0.2, limit_s: float = 60.0) -> float:
    """sync, then wait until the device has no I/O in flight and its write counter stays
    still for ``settle_s``. Returns the seconds waited (recorded in provenance)."""
    started = time.monotonic()
    os.sync()  # sync(2) itself: no process start (costly in a TCG guest), as drop_caches
    last = device.read_stat()
    still_since = time.monotonic()
    while time.monotonic() - started < limit_s:
        time.sleep(0.05)
        now = device.read_stat()
        busy = now["in_flight"] > 0 or now["write_sectors"] != last["write_sectors"]
        last = now
        if busy:
            still_since = time.monotonic()
        elif time.monotonic() - still_since >= settle_s:
            break
    return time.monotonic() - started


def describe(fstype: FilesystemType, device: DeviceHandle, mountpoint: Path) -> tuple[dict[str, Any], str]:
    """(selected facts, full text) from the file system's own info tool."""
    if fstype.info is None:
        return {}, ""
    try:
        return fstype.info(device.path, str(mountpoint))
    except CommandFailed as exc:
        return {"info_error": str(exc)}, exc.stderr
