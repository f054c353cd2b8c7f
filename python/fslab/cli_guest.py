"""`fslab guest build|status|clean`: the QEMU guest's kernel and root, in the cache."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated

import typer

from .errors import FslabError


def _size(path: Path) -> int:
    """Bytes on disk under ``path`` (a file or a folder)."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _mib(n: int) -> str:
    return f"{n / (1 << 20):,.1f} MiB"


def register(app: typer.Typer) -> None:
    """Add the ``guest`` command group to the fslab CLI."""
    guest = typer.Typer(help="The QEMU guest (stock Debian kernel) that runs file systems, "
                             "RAID and emulated devices this kernel lacks.",
                        no_args_is_help=True)
    app.add_typer(guest, name="guest")

    @guest.command("build")
    def build_cmd(
        kernel: Annotated[str, typer.Option(help='"6.1" (Debian 12), "6.12", or a path to a vmlinuz')] = "6.1",
        force: Annotated[bool, typer.Option(help="rebuild even if the cache is current")] = False,
        probe_kvm: Annotated[bool, typer.Option(help="also decide (by trying) whether KVM works")] = True,
    ) -> None:
        """Fetch the kernel package and build the guest's initramfs (cached by its inputs)."""
        from .backends.guest.build import build
        from .backends.guest.kvm import PROBE_TIMEOUT_S, kvm_verdict
        from .cli import err_console

        steps = 2 if probe_kvm else 1
        # Each step's time is not known in advance (a download, a trial boot): a counter and
        # the time spent, with the longest the probe may take.
        with err_console.status(f"[1/{steps}] fetching the kernel package (cached after the first time) "
                                "and building the initramfs"):
            b = build(kernel, force=force)
        print(f"guest {b.key}: {b.package} {b.package_version} (kernel {b.release})")
        print(f"  initramfs {b.initramfs} ({_mib(b.initramfs_bytes)}, {len(b.modules_loaded)} modules)")
        if probe_kvm:
            with err_console.status(f"[2/2] trying KVM with one boot (at most {PROBE_TIMEOUT_S:.0f} s; "
                                    "remembered afterwards)"):
                v = kvm_verdict(b)
            print(f"  accelerator: {'KVM' if v.usable else 'TCG (software emulation)'}: {v.reason}")

    @guest.command("status")
    def status_cmd() -> None:
        """What is cached (key, kernel, sizes), the KVM verdict and any live guests."""
        from .backends.guest import paths
        from .backends.guest.build import cached_builds
        from .backends.guest.kvm import cached_verdict
        from .backends.guest.reaper import GuestState, alive, state_files

        root = paths.cache_root()
        print(f"cache: {root}" + ("" if root.exists() else " (empty)"))
        builds = cached_builds()
        for b in builds:
            print(f"  build {b.key}: kernel {b.kernel_spec!r} = {b.package} {b.package_version}, "
                  f"initramfs {_mib(b.initramfs_bytes)}")
            qemu = shutil.which("qemu-system-x86_64")
            verdict = cached_verdict(b, qemu) if qemu else None
            print("    accelerator: " + ("not probed yet (fslab guest build probes it)" if verdict is None
                  else f"{'KVM' if verdict.usable else 'TCG'}: {verdict.reason}"))
        if not builds:
            print("  no guest built: run `fslab guest build`")
        for folder in (paths.debs_dir(), paths.kernels_dir()):
            if folder.exists():
                for entry in sorted(folder.iterdir()):
                    print(f"  {folder.name}/{entry.name}: {_mib(_size(entry))}")
        for path in state_files():
            s = GuestState.read(path)
            state = "running" if alive(s.qemu_pid, s.qemu_start_ticks) else "stopped"
            owner = "alive" if alive(s.owner_pid, s.owner_start_ticks) else "gone (fslab cleanup)"
            print(f"  guest {Path(s.folder).name}: QEMU pid {s.qemu_pid} {state}, "
                  f"owner pid {s.owner_pid} {owner}")

    @guest.command("clean")
    def clean_cmd(
        keep_downloads: Annotated[bool, typer.Option(help="keep the downloaded .deb files")] = False,
    ) -> None:
        """Remove built guests, unpacked kernels (and downloads); stop orphaned guests first."""
        from .backends.guest import paths
        from .backends.guest.reaper import cleanup_guests

        lines = cleanup_guests()
        for line in lines:
            print(line)
        if any(line.startswith("leave guest") for line in lines):
            raise FslabError("a guest of a running fslab process uses the cache; clean after it ends")
        targets = [paths.builds_dir(), paths.kernels_dir(), paths.cache_root() / "kvm.json",
                   paths.cache_root() / "apt"]
        if not keep_downloads:
            targets.append(paths.debs_dir())
        freed = 0
        for target in targets:
            if target.exists():
                freed += _size(target)
                if target.is_dir():
                    shutil.rmtree(target)
                else:
                    target.unlink()
        print(f"removed {_mib(freed)} from {paths.cache_root()}")
