"""The guest's kernel: a stock Debian ``linux-image-*-amd64`` package, fetched with
``apt-get download``, unpacked with ``dpkg-deb -x`` into the cache and never installed.

``kernel`` in a study is ``"6.1"`` (Debian 12's default, through the ``linux-image-amd64``
meta-package), ``"6.12"`` (through ``linux-image-6.12-amd64``, which Debian 12 now carries
in bookworm-security; where the machine's sources lack it, a private apt configuration
with bookworm-backports is used — the machine's own sources are never changed), or a PATH
to a kernel image (a vmlinuz whose modules sit in ``../lib/modules/<release>`` of the same
tree, as an unpacked package has them). The -cloud flavour is never chosen: it lacks f2fs,
jfs and nilfs2.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from ...commands import run_command
from ...errors import CommandFailed, MissingCapability, SpecError
from . import paths

# The meta-package that names the current kernel of each supported series.
META_PACKAGES = {"6.1": "linux-image-amd64", "6.12": "linux-image-6.12-amd64"}
BACKPORTS_LINE = ("deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
                  "http://deb.debian.org/debian bookworm-backports main")
_IMAGE_RE = re.compile(r"^linux-image-(\d+\.\d+[\w.+~-]*)-amd64$")


@dataclass(frozen=True)
class KernelTree:
    """An unpacked kernel: the image to boot and its modules (with modules.dep)."""

    package: str           # e.g. linux-image-6.1.0-56-amd64, or "path:<vmlinuz>"
    package_version: str   # the .deb's version, e.g. 6.1.192-2 ("" for a path)
    release: str           # uname -r in the guest, e.g. 6.1.0-56-amd64
    vmlinuz: Path
    modules: Path          # .../lib/modules/<release>

    def module_path(self, name: str) -> Path | None:
        """The .ko file of a module by name (dashes and underscores are the same)."""
        dep = self.modules / "modules.dep"
        wanted = name.replace("-", "_")
        for line in dep.read_text().splitlines():
            rel = line.split(":", 1)[0]
            base = Path(rel).name.split(".ko")[0].replace("-", "_")
            if base == wanted:
                return self.modules / rel
        return None

    def is_builtin(self, name: str) -> bool:
        """Whether a module is built into the kernel image (6.12 builds virtio_pci in)."""
        builtin = self.modules / "modules.builtin"
        wanted = name.replace("-", "_")
        if not builtin.exists():
            return False
        return any(Path(line).name.split(".ko")[0].replace("-", "_") == wanted
                   for line in builtin.read_text().splitlines())


def config_hz(vmlinuz: Path, release: str) -> int | None:
    """The kernel's timer frequency (CONFIG_HZ) from the config beside its image, as
    Debian's packages ship it; None without one."""
    try:
        text = (vmlinuz.parent / f"config-{release}").read_text()
    except OSError:
        return None
    match = re.search(r"^CONFIG_HZ=(\d+)$", text, re.MULTILINE)
    return int(match.group(1)) if match else None


def _apt_private_options(root: Path) -> list[str]:
    """apt options for a private configuration: its own sources list (the machine's
    Debian sources plus bookworm-backports) and its own state and cache folders."""
    apt_root = root / "apt"
    (apt_root / "state" / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (apt_root / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    sources = apt_root / "sources.list"
    if not sources.exists():
        sources.write_text(BACKPORTS_LINE + "\n")
    return ["-o", f"Dir::Etc::sourcelist={sources}",
            "-o", "Dir::Etc::sourceparts=-",
            "-o", f"Dir::State={apt_root / 'state'}",
            "-o", "Dir::State::status=/var/lib/dpkg/status",
            "-o", f"Dir::Cache={apt_root / 'cache'}"]


# What apt's answer depends on: its package lists, the installed set, its configuration
# (sources, pins). A private configuration keeps its lists under its own state folder.
SYSTEM_APT_STATE = (Path("/var/lib/apt/lists"), Path("/var/lib/dpkg/status"), Path("/etc/apt"))
RESOLVED_FILE = "resolved-packages.json"


def apt_fingerprint(places: tuple[Path, ...]) -> str:
    """A digest of the names, inodes, sizes, modification and change times of every file
    in ``places`` (files, or folders walked whole): what ``apt-cache`` reads. An update, an
    install or a changed source or pin changes it."""
    seen: list[str] = []
    for place in places:
        for folder, dirs, files in os.walk(place) if place.is_dir() else [(str(place.parent), [], [place.name])]:
            dirs.sort()
            for name in sorted(files):
                try:
                    st = os.stat(os.path.join(folder, name))
                except OSError:
                    continue  # gone (apt replaces lists by renaming) or unreadable
                # ctime too: a copy that keeps the size and mtime (cp -p, rsync -a) still sets it
                seen.append(f"{folder}/{name}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}")
    return hashlib.sha256("\n".join(seen).encode()).hexdigest()


def resolve_package_cached(series: str, root: Path, *, private: list[str] | None = None,
                           state: tuple[Path, ...] | None = None) -> str:
    """``resolve_package``, remembered in the cache for as long as apt's state is
    unchanged: apt-cache rebuilds its package cache in memory at every start (1.4 s of
    CPU here), and every boot needs the answer."""
    if state is None:
        private_state = (root / "apt" / "sources.list", root / "apt" / "state" / "lists")
        state = (*private_state, *SYSTEM_APT_STATE[1:]) if private else SYSTEM_APT_STATE
    key = f"{series}|{'private' if private else 'system'}|{apt_fingerprint(state)}"
    file = root / RESOLVED_FILE
    try:
        known = json.loads(file.read_text())
    except (OSError, ValueError):
        known = {}
    if not isinstance(known, dict):
        known = {}
    if isinstance(known.get(key), str):
        return str(known[key])
    package = resolve_package(series, private=private)
    # Only the newest answer per series and configuration: older keys can never match again.
    known = {k: v for k, v in known.items() if not k.startswith(key.rsplit("|", 1)[0] + "|")}
    known[key] = package
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = file.with_name(f".{file.name}.{os.getpid()}")
        tmp.write_text(json.dumps(known, indent=1) + "\n")
        tmp.replace(file)
    except OSError:
        pass  # a cache this user cannot write: asked again next time
    return package


def resolve_package(series: str, *, private: list[str] | None = None) -> str:
    """The concrete image package the series' meta-package depends on now, e.g.
    ``linux-image-6.1.0-56-amd64``. In the private configuration (backports alone) the
    series' kernel is what ``linux-image-amd64`` points to there. Raises
    MissingCapability when apt does not know it."""
    meta = "linux-image-amd64" if private else META_PACKAGES[series]
    argv = ["apt-cache", *(private or []), "depends", meta]
    done = run_command(argv, timeout=60, check=False)
    for line in done.stdout.splitlines():
        line = line.strip()
        if line.startswith("Depends:"):
            name = line.split(":", 1)[1].strip()
            if _IMAGE_RE.match(name) and "-cloud-" not in name and \
                    name.startswith(f"linux-image-{series}."):
                return name
    raise MissingCapability(f"apt does not know {meta} (kernel {series!r})",
                            fix="apt-get update")


def _package_version(deb: Path) -> str:
    return run_command(["dpkg-deb", "-f", str(deb), "Version"], timeout=60).stdout.strip()


def download(package: str, root: Path, *, private: list[str] | None = None) -> Path:
    """The package's .deb in the cache, downloaded once with ``apt-get download``."""
    debs = paths.debs_dir(root)
    debs.mkdir(parents=True, exist_ok=True)
    have = sorted(debs.glob(f"{package}_*_amd64.deb"))
    if have:
        return have[-1]
    try:
        run_command(["apt-get", *(private or []), "download", package], cwd=str(debs), timeout=900)
    except CommandFailed as exc:
        raise MissingCapability(f"cannot download {package}: {exc}",
                                fix="apt-get update, and check the network") from exc
    have = sorted(debs.glob(f"{package}_*_amd64.deb"))
    if not have:
        raise MissingCapability(f"apt-get download {package} left no .deb in {debs}")
    return have[-1]


def unpack(deb: Path, root: Path) -> KernelTree:
    """Unpack a kernel .deb into the cache (once) and run depmod on it, so the guest's
    modprobe finds modules and their dependencies."""
    version = _package_version(deb)
    package = deb.name.split("_", 1)[0]
    target = paths.kernels_dir(root) / f"{package}_{version}"
    if not (target / ".complete").exists():
        shutil.rmtree(target, ignore_errors=True)
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        run_command(["dpkg-deb", "-x", str(deb), str(partial)], timeout=900)
        partial.rename(target)
    tree = _tree_of(target, package, version)
    if not (target / ".complete").exists():
        run_command(["depmod", "-b", str(target), tree.release], timeout=300)
        (target / ".complete").write_text(version + "\n")
    return tree


def _tree_of(target: Path, package: str, version: str) -> KernelTree:
    images = sorted((target / "boot").glob("vmlinuz-*"))
    if not images:
        raise MissingCapability(f"{target} holds no boot/vmlinuz-*: not a kernel package")
    release = images[-1].name.removeprefix("vmlinuz-")
    return KernelTree(package, version, release, images[-1],
                      target / "lib" / "modules" / release)


def from_path(image: Path) -> KernelTree:
    """A kernel given by path: ``<tree>/boot/vmlinuz-<release>`` with its modules in
    ``<tree>/lib/modules/<release>`` (where an unpacked package puts them)."""
    image = image.resolve()
    if not image.is_file():
        raise SpecError(f"{image} is not a file", field="kernel")
    release = image.name.removeprefix("vmlinuz-")
    modules = image.parent.parent / "lib" / "modules" / release
    if not modules.is_dir():
        raise SpecError(f"no modules for {image.name}: expected {modules} (unpack the "
                        "kernel package with dpkg-deb -x and name its boot/vmlinuz-*)",
                        field="kernel")
    if not (modules / "modules.dep").exists():
        run_command(["depmod", "-b", str(image.parent.parent), release], timeout=300)
    return KernelTree(f"path:{image}", "", release, image, modules)


def fetch_kernel(kernel: str, root: Path | None = None) -> KernelTree:
    """Fetch and unpack the kernel a study names ("6.1", "6.12" or a path)."""
    root = root or paths.cache_root()
    if kernel not in META_PACKAGES:
        if "/" in kernel:
            return from_path(Path(kernel))
        raise SpecError(f"unknown kernel {kernel!r}: use \"6.1\", \"6.12\" or a path to a "
                        "vmlinuz", field="kernel")
    private: list[str] | None = None
    try:
        try:
            package = resolve_package_cached(kernel, root)
        except MissingCapability:
            if kernel == "6.1":
                raise
            # Not in the machine's sources: a private configuration with backports.
            private = _apt_private_options(root)
            run_command(["apt-get", *private, "update"], timeout=900)
            package = resolve_package_cached(kernel, root, private=private)
    except (MissingCapability, CommandFailed):
        # Offline, or apt lost track of it: the newest package of the series in the cache.
        cached = sorted(paths.debs_dir(root).glob(f"linux-image-{kernel}.*-amd64_*_amd64.deb"))
        cached = [deb for deb in cached if "-cloud-" not in deb.name]
        if not cached:
            raise
        return unpack(cached[-1], root)
    return unpack(download(package, root, private=private), root)


def current_package(kernel: str) -> str:
    """The package name a series resolves to now, without downloading (for status)."""
    return resolve_package(kernel)
