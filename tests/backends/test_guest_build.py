"""The guest builder's pure parts: the cpio writer, module dependency order and the cache
key (no QEMU, no download: a kernel tree is laid out by hand in a temp folder)."""

from __future__ import annotations

import gzip
import json
import lzma
import os
import stat
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from fslab.backends.guest import cpio
from fslab.backends.guest.build import BUSYBOX, INITRAMFS_MODULES, build, cache_key, module_closure, unpack_kernel
from fslab.backends.guest.kernel import KernelTree, fetch_kernel, from_path
from fslab.errors import MissingCapability, SpecError


def _parse_newc(data: bytes) -> list[tuple[str, int, bytes]]:
    """(name, mode, body) of each member, read back by an independent parser."""
    out, pos = [], 0
    while True:
        assert data[pos:pos + 6] == b"070701"
        fields = [int(data[pos + 6 + 8 * i: pos + 14 + 8 * i], 16) for i in range(13)]
        mode, size, namesize = fields[1], fields[6], fields[11]
        name_start = pos + 110
        name = data[name_start:name_start + namesize - 1].decode()
        body_start = (name_start + namesize + 3) & ~3
        body = data[body_start:body_start + size]
        pos = (body_start + size + 3) & ~3
        if name == "TRAILER!!!":
            return out
        out.append((name, mode, body))


def test_cpio_archive_reads_back_with_types_and_bodies(tmp_path: Path) -> None:
    entries = [cpio.Entry("bin"), cpio.Entry("bin/tool", b"\x7fELF...", 0o755),
               cpio.Entry("init", b"#!/bin/sh\n"), cpio.Entry("sh", target="bin/tool"),
               cpio.Entry("odd", b"12345", 0o644)]
    path = tmp_path / "i.cpio"
    assert cpio.write(entries, path) == path.stat().st_size
    members = _parse_newc(path.read_bytes())
    assert [m[0] for m in members] == ["bin", "bin/tool", "init", "sh", "odd"]
    assert stat.S_ISDIR(members[0][1])
    assert stat.S_ISREG(members[1][1]) and members[1][2] == b"\x7fELF..."
    assert stat.S_ISLNK(members[3][1]) and members[3][2] == b"bin/tool"
    assert members[4][1] & 0o777 == 0o644 and members[4][2] == b"12345"
    # Same entries, same bytes: the archive is reproducible.
    again = tmp_path / "again.cpio"
    cpio.write(entries, again)
    assert again.read_bytes() == path.read_bytes()


def _tree(tmp_path: Path, dep_lines: list[str]) -> KernelTree:
    release = "6.1.0-99-amd64"
    boot = tmp_path / "boot"
    boot.mkdir(parents=True)
    (boot / f"vmlinuz-{release}").write_bytes(b"kernel")
    modules = tmp_path / "lib" / "modules" / release
    modules.mkdir(parents=True)
    (modules / "modules.dep").write_text("\n".join(dep_lines) + "\n")
    return from_path(boot / f"vmlinuz-{release}")


DEPS = [
    "kernel/fs/9p/9p.ko: kernel/fs/fscache/fscache.ko kernel/fs/netfs/netfs.ko kernel/net/9p/9pnet.ko",
    "kernel/fs/fscache/fscache.ko: kernel/fs/netfs/netfs.ko",
    "kernel/fs/netfs/netfs.ko:",
    "kernel/net/9p/9pnet.ko:",
    "kernel/net/9p/9pnet_virtio.ko: kernel/net/9p/9pnet.ko kernel/drivers/virtio/virtio_ring.ko",
    "kernel/drivers/virtio/virtio_ring.ko:",
    "kernel/drivers/md/dm-delay.ko: kernel/drivers/md/dm-mod.ko",
    "kernel/drivers/md/dm-mod.ko:",
]


def test_module_closure_puts_dependencies_first(tmp_path: Path) -> None:
    tree = _tree(tmp_path, DEPS)
    order = [Path(p).name for p in module_closure(tree, ("9pnet_virtio", "9p", "dm_delay"))]
    assert order.index("9pnet.ko") < order.index("9pnet_virtio.ko")
    assert order.index("netfs.ko") < order.index("fscache.ko") < order.index("9p.ko")
    assert order.index("dm-mod.ko") < order.index("dm-delay.ko")  # dashes = underscores
    assert len(order) == len(set(order)) == 8


def test_a_missing_module_is_named(tmp_path: Path) -> None:
    with pytest.raises(MissingCapability, match="no module 'f2fs'"):
        module_closure(_tree(tmp_path, DEPS), ("f2fs",))


def test_cache_key_changes_with_its_inputs_only(tmp_path: Path) -> None:
    tree = _tree(tmp_path, DEPS)
    key = cache_key(tree, ("9p",))
    assert cache_key(tree, ("9p",)) == key
    assert cache_key(tree, ("9p", "overlay")) != key
    other = KernelTree(tree.package, "6.1.999-1", tree.release, tree.vmlinuz, tree.modules)
    assert cache_key(other, ("9p",)) != key


def test_a_kernel_path_without_modules_is_refused(tmp_path: Path) -> None:
    image = tmp_path / "vmlinuz-6.1.0-1-amd64"
    image.write_bytes(b"kernel")
    with pytest.raises(SpecError, match="no modules for vmlinuz-6.1.0-1-amd64"):
        fetch_kernel(str(image), tmp_path)
    with pytest.raises(SpecError, match='use "6.1", "6.12" or a path'):
        fetch_kernel("5.10", tmp_path)


def _elf_with_note(name: bytes, note_type: int) -> bytes:
    """A 64-bit ELF whose one program header is a PT_NOTE holding one note."""
    desc = struct.pack("<Q", 0x1000000)
    note = struct.pack("<III", len(name) + 1, len(desc), note_type) + name + b"\0" * (4 - len(name) % 4) + desc
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9) + struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, 0, 64, 0, 0,
                                                                       64, 56, 1, 0, 0, 0)
    phdr = struct.pack("<IIQQQQQQ", 4, 4, 64 + 56, 0, 0, len(note), len(note), 4)
    return header + phdr + note


@pytest.mark.parametrize("name,note_type,boots", [(b"Xen", 18, True), (b"Xen", 5, False), (b"GNU", 18, False)])
def test_the_kernel_is_unpacked_only_with_a_pvh_entry(tmp_path: Path, name: bytes, note_type: int,
                                                      boots: bool) -> None:
    elf = _elf_with_note(name, note_type)
    bzimage = tmp_path / "vmlinuz"
    bzimage.write_bytes(b"MZ setup code" + bytes(500) + lzma.compress(elf, format=lzma.FORMAT_XZ) + b"tail")
    unpacked = unpack_kernel(bzimage, tmp_path / "vmlinux")
    assert (unpacked is not None) == boots
    if boots:
        assert unpacked == tmp_path / "vmlinux" and unpacked.read_bytes() == elf
    else:
        assert not (tmp_path / "vmlinux").exists()


def test_a_kernel_without_an_xz_payload_is_booted_as_it_is(tmp_path: Path) -> None:
    bzimage = tmp_path / "vmlinuz"
    bzimage.write_bytes(b"MZ" + bytes(100) + gzip.compress(_elf_with_note(b"Xen", 18)))
    assert unpack_kernel(bzimage, tmp_path / "vmlinux") is None


def _buildable_tree(folder: Path) -> Path:
    """A kernel tree with every initramfs module, each a few MiB of random bytes so that a
    build (copying them into the initramfs) takes long enough for two builders to overlap."""
    release = "6.1.0-98-amd64"
    modules = folder / "lib" / "modules" / release
    modules.mkdir(parents=True)
    lines = []
    for name in INITRAMFS_MODULES:
        (modules / f"{name}.ko").write_bytes(os.urandom(4 << 20))
        lines.append(f"{name}.ko:")
    (modules / "modules.dep").write_text("\n".join(lines) + "\n")
    (folder / "boot").mkdir()
    image = folder / "boot" / f"vmlinuz-{release}"
    image.write_bytes(b"kernel")
    return image


BUILDER = """
import sys
from pathlib import Path
from fslab.backends.guest.build import build
for _ in range(3):
    build(sys.argv[1], root=Path(sys.argv[2]), force=True)
"""


@pytest.mark.skipif(not BUSYBOX.exists(), reason="busybox is not installed (apt-get install busybox-static)")
def test_two_processes_building_one_cache_at_once_both_succeed(tmp_path: Path) -> None:
    # Without the cache's build lock each deletes the other's half-written .partial folder.
    image = _buildable_tree(tmp_path / "tree")
    root = tmp_path / "cache"
    builders = [subprocess.Popen([sys.executable, "-c", BUILDER, str(image), str(root)],
                                 stderr=subprocess.PIPE, text=True) for _ in range(2)]
    errors = [p.communicate(timeout=300)[1] for p in builders]
    assert [p.returncode for p in builders] == [0, 0], errors
    [built] = (root / "builds").iterdir()
    assert (built / "manifest.json").exists() and not list((root / "builds").glob("*.partial"))


# The initramfs modules as Debian's 6.1 lays them out (names shortened), dependencies as
# its modules.dep lists them: every one, the deepest last.
GUEST_DEPS = [
    "kernel/drivers/virtio/virtio_pci.ko: kernel/drivers/virtio/virtio_pci_modern_dev.ko "
    "kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko",
    "kernel/drivers/virtio/virtio_pci_modern_dev.ko:",
    "kernel/drivers/virtio/virtio.ko: kernel/drivers/virtio/virtio_ring.ko",
    "kernel/drivers/virtio/virtio_ring.ko:",
    "kernel/drivers/block/virtio_blk.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko",
    "kernel/drivers/block/loop.ko:",
    "kernel/net/9p/9pnet_virtio.ko: kernel/net/9p/9pnet.ko kernel/drivers/virtio/virtio.ko "
    "kernel/drivers/virtio/virtio_ring.ko",
    "kernel/net/9p/9pnet.ko:",
    "kernel/fs/9p/9p.ko: kernel/fs/fscache/fscache.ko kernel/net/9p/9pnet.ko kernel/fs/netfs/netfs.ko",
    "kernel/fs/fscache/fscache.ko: kernel/fs/netfs/netfs.ko",
    "kernel/fs/netfs/netfs.ko:",
    "kernel/fs/overlayfs/overlay.ko:",
]


def _initramfs_of(tmp_path: Path, release: str) -> dict[str, tuple[int, bytes]]:
    """Build a guest from a hand-laid tree of GUEST_DEPS and read its initramfs back."""
    boot = tmp_path / "tree" / "boot"
    boot.mkdir(parents=True)
    (boot / f"vmlinuz-{release}").write_bytes(b"kernel")
    modules = tmp_path / "tree" / "lib" / "modules" / release
    for line in GUEST_DEPS:
        rel = line.split(":")[0]
        (modules / rel).parent.mkdir(parents=True, exist_ok=True)
        (modules / rel).write_bytes(b"module " + rel.encode())
    (modules / "modules.dep").write_text("\n".join(GUEST_DEPS) + "\n")
    built = build(str(boot / f"vmlinuz-{release}"), root=tmp_path / "cache")
    return {name: (mode, body) for name, mode, body in _parse_newc(built.initramfs.read_bytes())}


@pytest.mark.skipif(not BUSYBOX.exists(), reason="busybox is not installed (apt-get install busybox-static)")
def test_the_initramfs_splits_its_modules_into_boot_disk_and_late(tmp_path: Path) -> None:
    files = _initramfs_of(tmp_path, "6.1.0-97-amd64")
    mode, target = files["lib/modules/6.1.0-97-amd64"]
    assert stat.S_ISLNK(mode) and target == b"/modules"  # where busybox modprobe looks
    boot = files["modules/boot"][1].decode().split()
    disk = files["modules/disk"][1].decode().split()
    late = files["modules/late"][1].decode().split()
    assert boot.index("virtio_ring") < boot.index("virtio") < boot.index("virtio_pci")
    assert boot.index("netfs") < boot.index("fscache") < boot.index("9p")
    assert "overlay" in boot and "virtio_blk" not in boot and "loop" not in boot
    assert disk == ["virtio_blk"]  # virtio and virtio_ring come with the boot group
    assert late == ["loop.ko"]
    assert sorted(boot + disk + [m.removesuffix(".ko") for m in late]) == \
        sorted(Path(line.split(":")[0]).stem for line in GUEST_DEPS)
    dep = files["modules/modules.dep"][1].decode().splitlines()
    assert "9p.ko: fscache.ko 9pnet.ko netfs.ko" in dep  # the kernel's order, by file name
    for name in boot + disk:
        assert files[f"modules/{name}.ko"][1].startswith(b"module kernel/")


@pytest.mark.skipif(os.geteuid() != 0 or not BUSYBOX.exists(), reason="needs root (chroot) and busybox")
def test_busybox_modprobe_in_the_initramfs_loads_dependencies_first(tmp_path: Path) -> None:
    # The guest's init runs `modprobe -a <boot group>`: what busybox would insmod, in order,
    # read from the very archive (unpacked, chrooted into, the host's release as the guest's).
    release = os.uname().release
    files = _initramfs_of(tmp_path, release)
    root = tmp_path / "root"
    for name, (mode, body) in files.items():
        path = root / name
        if stat.S_ISDIR(mode):
            path.mkdir(parents=True, exist_ok=True)
        elif stat.S_ISLNK(mode):
            path.symlink_to(body.decode())
        else:
            path.write_bytes(body)
            path.chmod(mode & 0o777)
    boot = files["modules/boot"][1].decode().split()
    done = subprocess.run(["chroot", str(root), "/bin/busybox", "modprobe", "-D", "-a", *boot],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    loaded = [Path(line.split()[1]).stem for line in done.stdout.splitlines()]
    for line in GUEST_DEPS:
        mod, _, deps = line.partition(":")
        if Path(mod).stem in boot:
            assert all(loaded.index(Path(d).stem) < loaded.index(Path(mod).stem) for d in deps.split())
    assert set(loaded) == set(boot)


def test_the_kernel_package_is_asked_of_apt_again_only_when_its_state_changes(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """apt's answer is remembered per state of its lists, installed set and configuration:
    the same state asks apt once; a list replaced by an update, a new source file, an
    install, or a copy that keeps size and mtime asks again. A state folder here stands in
    for /var/lib/apt/lists, and a counter for apt-cache (whose own answer
    test_guest_kernels checks in a real guest)."""
    import shutil

    from fslab.backends.guest import kernel

    lists, etc = tmp_path / "lists", tmp_path / "etc-apt"
    lists.mkdir()
    etc.mkdir()
    packages = lists / "deb.debian.org_Packages"
    packages.write_text("Package: a\n")
    status = tmp_path / "status"
    status.write_text("Package: b\n")
    state = (lists, status, etc)
    asked: list[str] = []

    def apt(series: str, *, private: list[str] | None = None) -> str:
        asked.append(series)
        return f"linux-image-{series}.0-{len(asked)}-amd64"

    monkeypatch.setattr(kernel, "resolve_package", apt)
    cache = tmp_path / "cache"
    first = kernel.resolve_package_cached("6.1", cache, state=state)
    assert kernel.resolve_package_cached("6.1", cache, state=state) == first == "linux-image-6.1.0-1-amd64"
    assert asked == ["6.1"]

    def copied_keeping_size_and_mtime() -> None:
        was = packages.stat()
        other = tmp_path / "other"
        other.write_text("Package: z\nVersion: 3\n")
        assert other.stat().st_size == was.st_size
        shutil.copy2(other, packages)
        os.utime(packages, ns=(was.st_atime_ns, was.st_mtime_ns))  # as `cp -p` of an older copy leaves it

    changes = [lambda: packages.write_text("Package: a\nVersion: 2\n"),  # an update
               lambda: (etc / "sources.list.d").mkdir() or (etc / "sources.list.d" / "x.list").write_text("deb x\n"),
               lambda: os.utime(status, ns=(1, 1)),  # an install rewrites dpkg's status
               copied_keeping_size_and_mtime]
    for n, change in enumerate(changes, start=2):
        change()
        assert kernel.resolve_package_cached("6.1", cache, state=state) == f"linux-image-6.1.0-{n}-amd64"
        assert len(asked) == n, f"change {n - 1} did not ask apt again"
    assert kernel.resolve_package_cached("6.12", cache, state=state) == "linux-image-6.12.0-6-amd64"
    # one entry per series and configuration: stale states are not kept
    assert sorted(json.loads((cache / kernel.RESOLVED_FILE).read_text()).values()) == [
        "linux-image-6.1.0-5-amd64", "linux-image-6.12.0-6-amd64"]
