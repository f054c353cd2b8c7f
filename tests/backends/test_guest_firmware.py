"""The firmware a guest boots with: qboot from QEMU's own data folder under TCG, where that
QEMU ships it; SeaBIOS (QEMU's default, no -bios) under KVM or without qboot."""

from __future__ import annotations

from pathlib import Path

from fslab.backends.guest import launcher
from fslab.backends.guest.build import GuestBuild
from fslab.backends.guest.launcher import Guest, GuestConfig


def _qemu_install(root: Path, with_qboot: bool) -> Path:
    """A QEMU laid out as a distribution installs it: bin/ and share/qemu/ under one prefix,
    reached here through a symlink (as /usr/bin/qemu-system-x86_64 may be)."""
    (root / "bin").mkdir(parents=True)
    (root / "share" / "qemu").mkdir(parents=True)
    binary = root / "bin" / "qemu-system-x86_64"
    binary.write_bytes(b"")
    if with_qboot:
        (root / "share" / "qemu" / launcher.TCG_FIRMWARE).write_bytes(b"rom")
    link = root / "elsewhere" / "qemu"
    link.parent.mkdir()
    link.symlink_to(binary)
    return link


def test_qboot_is_found_beside_the_qemu_binary_it_belongs_to(tmp_path: Path) -> None:
    qemu = _qemu_install(tmp_path / "with", with_qboot=True)
    rom = (tmp_path / "with" / "share" / "qemu" / launcher.TCG_FIRMWARE).resolve()
    assert launcher.tcg_firmware(str(qemu)) == ["-bios", str(rom)]
    assert launcher.tcg_firmware(str(_qemu_install(tmp_path / "without", with_qboot=False))) == []


def _argv(tmp_path: Path, qemu: Path, kvm: bool) -> list[str]:
    b = GuestBuild("k", "6.1", "p", "v", "6.1.0-99-amd64", tmp_path / "vmlinuz", tmp_path / "m",
                   tmp_path / "initramfs.cpio", 0, (), 0.0)
    guest = Guest(GuestConfig(), b)
    guest.kvm = kvm
    guest.console_path = tmp_path / "console"
    return guest._qemu_argv(str(qemu), tmp_path)


def test_only_a_tcg_guest_boots_qboot(tmp_path: Path) -> None:
    qemu = _qemu_install(tmp_path / "qemu", with_qboot=True)
    tcg = _argv(tmp_path, qemu, kvm=False)
    assert tcg[tcg.index("-bios") + 1].endswith("/share/qemu/qboot.rom")
    assert "-bios" not in _argv(tmp_path, qemu, kvm=True)
