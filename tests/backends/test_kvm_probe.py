"""The KVM probe's verdicts, with a stand-in QEMU that behaves as each kind of KVM does: a
boot that reaches the probe's marker, one that never runs the kernel (no console output
at all: given up at PROBE_SILENT_S, not at the full timeout), one that prints and then
hangs, and a QEMU that refuses to start. The real probe runs in the guest tier."""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from fslab.backends.guest import kvm

FAKE_QEMU = f"""#!{sys.executable}
import sys, time
args = sys.argv[1:]
console = args[args.index("-serial") + 1].removeprefix("file:")
mode = open({{mode_file!r}}).read()
if mode == "refuses":
    sys.stderr.write("qemu-system-x86_64: failed to set MSR 0x10a\\n")
    sys.exit(1)
if mode in ("boots", "hangs"):
    with open(console, "a") as f:
        f.write("Linux version 6.1.0-fake\\n")
if mode == "boots":
    with open(console, "a") as f:
        f.write("{kvm.PROBE_MARKER}\\n")
    sys.exit(0)
time.sleep(600)
"""


@pytest.fixture
def fake_qemu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    mode_file = tmp_path / "mode"
    qemu = tmp_path / "qemu-system-x86_64"
    qemu.write_text(FAKE_QEMU.format(mode_file=str(mode_file)))
    qemu.chmod(qemu.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(kvm.os, "access", lambda path, mode: True)  # as if /dev/kvm were there
    monkeypatch.setattr(kvm, "PROBE_SILENT_S", 1.0)
    monkeypatch.setattr(kvm, "PROBE_TIMEOUT_S", 3.0)
    return str(qemu), mode_file


def _probe(qemu: str, mode_file: Path, mode: str) -> tuple[kvm.KvmVerdict, float]:
    mode_file.write_text(mode)
    build = SimpleNamespace(boot_kernel=Path("/nonexistent/vmlinuz"), initramfs=Path("/nonexistent/initrd"),
                            release="6.1.0-fake")
    started = time.monotonic()
    verdict = kvm.probe(build, qemu)  # type: ignore[arg-type]
    return verdict, time.monotonic() - started


def test_a_boot_that_reaches_the_marker_is_usable(fake_qemu: tuple[str, Path]) -> None:
    verdict, _ = _probe(*fake_qemu, "boots")
    assert verdict.usable and verdict.reason == "a stock kernel booted with -accel kvm"


def test_a_silent_boot_is_given_up_at_the_silence_limit_not_the_timeout(fake_qemu: tuple[str, Path]) -> None:
    verdict, took = _probe(*fake_qemu, "silent")
    assert not verdict.usable
    assert verdict.reason == "a KVM boot printed nothing in 1 s: the kernel never ran"
    assert 1.0 <= took < 2.5  # the timeout is 3 s


def test_a_boot_that_prints_and_hangs_runs_to_the_timeout(fake_qemu: tuple[str, Path]) -> None:
    verdict, took = _probe(*fake_qemu, "hangs")
    assert not verdict.usable and verdict.reason == "a KVM boot did not finish in 3 s"
    assert took >= 3.0


def test_a_qemu_that_refuses_kvm_says_why(fake_qemu: tuple[str, Path]) -> None:
    verdict, _ = _probe(*fake_qemu, "refuses")
    assert not verdict.usable
    assert verdict.reason == "QEMU exited 1 under KVM: qemu-system-x86_64: failed to set MSR 0x10a"


def test_no_stand_in_is_left_running(fake_qemu: tuple[str, Path]) -> None:
    qemu, mode_file = fake_qemu
    _probe(qemu, mode_file, "silent")
    running = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if qemu in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                running.append(pid)
        except OSError:
            continue
    assert running == []
