"""Build (or find in the cache) the guest: a kernel and a tiny initramfs that mounts the
host's root read-only over virtio-9p.

Why the shared root and not a self-contained busybox initramfs: both were measured on
this machine kind (2 cores, TCG with its default qemu64 CPU, guest kernel 6.1.0-56, 1 GiB,
2 vCPUs; median of 3 boots each, while the host was busy: load average about 6):

=========================================  ========================  ====================
                                           (a) busybox initramfs     (b) host root on 9p
=========================================  ========================  ====================
initramfs (gzip)                           107.6 MB, built in 25 s   1.4 MB, built in 0.4 s
QEMU start to a shell                      25.1 s                    17.4 s
``import fslab.cli, fslab.job.execute``       40.6 s                    25.0 s
fio 4 KiB randread, psync, 2 s, tmpfs      11.9k IOPS                11.9k IOPS
=========================================  ========================  ====================

(a) held only what the job entry imports (395 files found through sys.modules), their
ldd-collected libraries, fio and busybox — no kernel modules yet, and it was already 108 MB:
the kernel spends the extra boot time unpacking it. The same import on the host took
1.3-1.5 s. fio is CPU-bound under TCG either way.

(b) runs the very same fslab, Python venv, Rust core and tools as the host, so a job in
the guest is the host's job with a different kernel; (a) would have to carry Python and
every dependency (numpy, pyarrow, ...), rebuilt whenever any of them changes. The kernel's
modules come from the unpacked package through a second share, and the guest's modprobe
(the host's kmod) loads f2fs, jfs, md, ... on demand.

The cache key is a hash of every input: the kernel package and version, the modules put
in the initramfs, busybox (its size and mtime), the init and agent scripts and
BUILDER_VERSION; a build is reused until one of them changes. Older builds are kept (the
initramfs, 3.5 MB uncompressed, and the unpacked kernel, about 66 MB for 6.1) so that a guest starting
from one is never pulled from under QEMU; `fslab guest clean` removes them.

The kernel is booted unpacked: Debian's vmlinuz is an xz-compressed bzImage whose
decompressor, run emulated under TCG, took several seconds of every boot; the ELF inside
has a PVH entry, which QEMU boots directly (``unpack_kernel``). Measured here under TCG,
host busy: QEMU start to the agent's ready 12.6-13.9 s unpacked, 18.2-25.5 s as bzImage.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import lzma
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ...datarecords import asdict
from ...errors import MissingCapability
from . import cpio, paths
from .init_script import render_agent, render_init
from .kernel import KernelTree, fetch_kernel

# 2: cgroup v2 with memory in the guest; 3: /tmp overlaid, not hidden; 4: the kernel
# unpacked for a PVH boot, loop in the initramfs, console marks; 5: mounts through
# generated tables; 6: modules through one modprobe, virtio_blk only with disks, loop after
# ready; 7: the initramfs uncompressed (cpio.write)
BUILDER_VERSION = 7
# What init needs before it can mount the host's root: virtio PCI, 9p over virtio, and
# the overlay for /etc, /var and /root.
BOOT_MODULES = ("virtio_pci", "9pnet_virtio", "9p", "overlay")
# Loaded by init only when the guest has a virtio disk (most jobs; not every guest).
DISK_MODULES = ("virtio_blk",)
# loop, which nothing would load on first use (no udev makes /dev/loop-control): insmod
# from the initramfs costs milliseconds, the host's modprobe over 9p under TCG about half a
# second. The agent loads it beside its first wait for a command, and the first command
# starts once it is in (init_script.AGENT), so no command runs without it. (overlay and
# loop loaded on the second vCPU beside the others made no difference: 7 boots each,
# alternated, at load 4-5.)
LATE_MODULES = ("loop",)
INITRAMFS_MODULES = BOOT_MODULES + DISK_MODULES + LATE_MODULES
BUSYBOX = Path("/bin/busybox")
BUILD_LOCK = "build.lock"  # in the cache root: held while fetching and building


@dataclass(frozen=True)
class GuestBuild:
    """A built guest: what QEMU boots. ``key`` names the inputs it was built from."""

    key: str
    kernel_spec: str         # what the study asked for: "6.1", "6.12" or a path
    package: str
    package_version: str
    release: str
    vmlinuz: Path
    modules: Path
    initramfs: Path
    initramfs_bytes: int
    modules_loaded: tuple[str, ...]
    built_s: float
    vmlinux: Path | None = None  # the kernel unpacked (ELF, PVH entry): what QEMU boots

    @property
    def boot_kernel(self) -> Path:
        """What ``-kernel`` gets: the unpacked ELF where there is one, else the package's
        compressed image."""
        return self.vmlinux or self.vmlinuz

    def manifest(self) -> dict[str, object]:
        data = asdict(self)
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in data.items()}


def _deps(tree: KernelTree) -> dict[str, list[str]]:
    deps: dict[str, list[str]] = {}
    for line in (tree.modules / "modules.dep").read_text().splitlines():
        mod, _, rest = line.partition(":")
        deps[mod] = rest.split()
    return deps


def module_closure(tree: KernelTree, names: tuple[str, ...]) -> list[str]:
    """Module files (relative to the modules folder) for ``names`` and everything they
    depend on, dependencies first: the order insmod needs."""
    deps = _deps(tree)
    order: list[str] = []

    def visit(rel: str) -> None:
        if rel in order:
            return
        for dep in deps.get(rel, []):
            visit(dep)
        order.append(rel)

    for name in names:
        path = tree.module_path(name)
        if path is None and tree.is_builtin(name):
            continue
        if path is None:
            raise MissingCapability(f"kernel {tree.release} has no module {name!r}")
        visit(str(path.relative_to(tree.modules)))
    return order


def cache_key(tree: KernelTree, modules: tuple[str, ...]) -> str:
    """A hash of everything a build depends on."""
    st = BUSYBOX.stat()
    inputs = {
        "builder": BUILDER_VERSION,
        "package": tree.package,
        "package_version": tree.package_version,
        "release": tree.release,
        "vmlinuz": [str(tree.vmlinuz), tree.vmlinuz.stat().st_size, tree.vmlinuz.stat().st_mtime_ns],
        "modules": list(modules),
        "module_groups": [BOOT_MODULES, DISK_MODULES, LATE_MODULES],
        "busybox": [str(BUSYBOX), st.st_size, st.st_mtime_ns],
        "init": render_init(),
        "agent": render_agent(),
    }
    blob = json.dumps(inputs, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def _entries(tree: KernelTree, closure: list[str]) -> list[cpio.Entry]:
    entries = [cpio.Entry(d) for d in ("bin", "dev", "proc", "sys", "modules", "newroot", "lib",
                                       "lib/modules")]
    entries.append(cpio.Entry("bin/busybox", BUSYBOX.read_bytes()))
    entries.append(cpio.Entry("init", render_init().encode()))
    entries.append(cpio.Entry("agent.sh", render_agent().encode(), 0o644))
    # busybox modprobe looks in /lib/modules/<release>: the flat folder, with a modules.dep
    # of the kernel's own dependency lines (every dependency, depmod's order) by file name.
    entries.append(cpio.Entry(f"lib/modules/{tree.release}", target="/modules"))
    deps = _deps(tree)
    dep_lines = []
    for rel in closure:
        base, data = _module_bytes(tree.modules / rel)
        entries.append(cpio.Entry(f"modules/{base}", data, 0o644))
        dep_lines.append(f"{base}: " + " ".join(_ko_name(d) for d in deps.get(rel, [])))
    entries.append(cpio.Entry("modules/modules.dep", ("\n".join(dep_lines) + "\n").encode(), 0o644))
    boot, disk, late = module_groups(tree)
    # boot and disk: module names for one modprobe each; late: files, in load order.
    entries.append(cpio.Entry("modules/boot", _names_line(boot), 0o644))
    entries.append(cpio.Entry("modules/disk", _names_line(disk), 0o644))
    entries.append(cpio.Entry("modules/late", "".join(_ko_name(m) + "\n" for m in late).encode(), 0o644))
    return entries


def module_groups(tree: KernelTree) -> tuple[list[str], list[str], list[str]]:
    """The module files init loads before its mounts, those it loads only for a virtio
    disk, and those the agent loads after ready: each group without what an earlier one
    already loads, dependencies first."""
    boot = module_closure(tree, BOOT_MODULES)
    disk = [m for m in module_closure(tree, BOOT_MODULES + DISK_MODULES) if m not in boot]
    late = [m for m in module_closure(tree, INITRAMFS_MODULES) if m not in boot and m not in disk]
    return boot, disk, late


def _ko_name(rel: str) -> str:
    """A module's file name in the initramfs (decompressed: .ko)."""
    return Path(rel).name.removesuffix(".xz")


def _names_line(rels: list[str]) -> bytes:
    """Module names on one line (empty where every one is built in)."""
    return (" ".join(_ko_name(r).removesuffix(".ko") for r in rels) + "\n").encode()


def _module_bytes(path: Path) -> tuple[str, bytes]:
    """A module's name and bytes as busybox insmod can load it: Debian's 6.12 packages
    compress modules with xz, which busybox's insmod does not read, so they are
    decompressed here (the guest's kmod modprobe reads them as they are)."""
    if path.name.endswith(".ko.xz"):
        return path.name.removesuffix(".xz"), lzma.decompress(path.read_bytes())
    if path.name.endswith(".ko"):
        return path.name, path.read_bytes()
    raise MissingCapability(f"{path.name}: only .ko and .ko.xz modules can go in the initramfs")


XZ_MAGIC = b"\xfd7zXZ\x00"
XEN_ELFNOTE_PHYS32_ENTRY = 18


def unpack_kernel(vmlinuz: Path, dest: Path) -> Path | None:
    """The kernel inside a compressed bzImage, written to ``dest``, when it is an xz
    payload holding an ELF with a PVH entry (Debian's 6.1 and 6.12 are); None otherwise.

    Why: under TCG the decompressor in front of a bzImage runs emulated, about 3 s for
    Debian's 8 MB image, on every boot; QEMU loads an ELF with a PVH entry note directly,
    so unpacking once here takes that off every boot."""
    data = vmlinuz.read_bytes()
    start = data.find(XZ_MAGIC)
    if start < 0:
        return None
    try:
        elf = lzma.LZMADecompressor(lzma.FORMAT_XZ).decompress(data[start:])
    except lzma.LZMAError:
        return None
    if elf[:4] != b"\x7fELF" or not _has_pvh_entry(elf):
        return None
    dest.write_bytes(elf)
    return dest


def _has_pvh_entry(elf: bytes) -> bool:
    """Whether a 64-bit little-endian ELF has a Xen PHYS32_ENTRY note (the PVH entry)."""
    import struct

    if elf[4] != 2 or elf[5] != 1:  # ELFCLASS64, little-endian
        return False
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", elf, phoff + i * phentsize)
        if p_type != 4:  # PT_NOTE
            continue
        pos, end = p_offset, p_offset + p_filesz
        while pos + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", elf, pos)
            name = elf[pos + 12:pos + 12 + namesz].rstrip(b"\0")
            if name == b"Xen" and ntype == XEN_ELFNOTE_PHYS32_ENTRY:
                return True
            pos += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4
    return False


def build(kernel: str = "6.1", *, root: Path | None = None, force: bool = False) -> GuestBuild:
    """The guest for ``kernel``, from the cache when its inputs are unchanged."""
    if not BUSYBOX.exists():
        raise MissingCapability("busybox is not installed (the guest's init needs it)",
                                fix="apt-get install busybox-static")
    root = root or paths.cache_root()
    with _build_lock(root):
        return _build_locked(kernel, root, force)


@contextlib.contextmanager
def _build_lock(root: Path) -> Iterator[None]:
    """One builder per cache at a time: two processes starting on a fresh cache (two
    studies, or the test suite's lanes) would otherwise download into and rebuild the same
    folders at once, each deleting the other's half-written ``.partial``. A waiter then
    finds the finished build. The kernel drops the lock when its holder dies."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        f = open(root / BUILD_LOCK, "a")  # noqa: SIM115 (held across the yield)
    except OSError:
        # A cache this user cannot write: nothing can be built in it, only read from it.
        yield
        return
    with f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _build_locked(kernel: str, root: Path, force: bool) -> GuestBuild:
    tree = fetch_kernel(kernel, root)
    key = cache_key(tree, INITRAMFS_MODULES)
    folder = paths.builds_dir(root) / key
    manifest = folder / "manifest.json"
    if manifest.exists() and not force:
        return load(manifest)
    started = time.monotonic()
    closure = module_closure(tree, INITRAMFS_MODULES)
    partial = folder.with_name(key + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    size = cpio.write(_entries(tree, closure), partial / "initramfs.cpio")
    vmlinux = unpack_kernel(tree.vmlinuz, partial / "vmlinux")
    result = GuestBuild(key, kernel, tree.package, tree.package_version, tree.release,
                        tree.vmlinuz, tree.modules, folder / "initramfs.cpio", size,
                        tuple(Path(c).name for c in closure), time.monotonic() - started,
                        folder / "vmlinux" if vmlinux else None)
    (partial / "manifest.json").write_text(json.dumps(result.manifest(), indent=2) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    return result


def load(manifest: Path) -> GuestBuild:
    data = json.loads(manifest.read_text())
    for field in ("vmlinuz", "modules", "initramfs"):
        data[field] = Path(data[field])
    if data.get("vmlinux"):
        data["vmlinux"] = Path(data["vmlinux"])
    data["modules_loaded"] = tuple(data["modules_loaded"])
    return GuestBuild(**data)


def cached_builds(root: Path | None = None) -> list[GuestBuild]:
    """Every complete build in the cache, newest first."""
    folder = paths.builds_dir(root)
    found = []
    for manifest in folder.glob("*/manifest.json") if folder.exists() else []:
        with contextlib.suppress(OSError, ValueError, TypeError):
            found.append(load(manifest))
    return sorted(found, key=lambda b: b.initramfs.stat().st_mtime, reverse=True)
