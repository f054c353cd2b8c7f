"""Whether KVM can boot a stock kernel here: decided by trying once, then remembered.

/dev/kvm existing proves little: on some virtual machines it is a paravirtual variant
that aborts on the first stock-kernel boot (here QEMU dies with "failed to set MSR
0x10a"). So the verdict comes from booting the guest's kernel in probe mode (init prints
a marker and reboots at once) with ``-accel kvm``; it is cached per host kernel, QEMU
binary and guest kernel, and TCG (software emulation) is used when it fails.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ...datarecords import asdict
from . import paths
from .build import GuestBuild

PROBE_MARKER = "FSLAB-PROBE-OK"
PROBE_TIMEOUT_S = 60.0
# A working KVM prints the kernel's first line within a second (earlyprintk); a KVM that
# cannot run it prints nothing at all (seen on an Intel host whose probe used to wait out
# PROBE_TIMEOUT_S: 60 s of every fresh machine's first guest).
PROBE_SILENT_S = 10.0
PROBE_POLL_S = 0.1


@dataclass(frozen=True)
class KvmVerdict:
    usable: bool
    reason: str
    key: str


def _key(build: GuestBuild, qemu: str) -> str:
    st = Path(qemu).stat()
    return f"{platform.release()}|{qemu}:{st.st_size}:{st.st_mtime_ns}|{build.release}"


def _verdict_file(root: Path | None) -> Path:
    return (root or paths.cache_root()) / "kvm.json"


def _read_all(root: Path | None) -> dict[str, dict[str, object]]:
    try:
        data = json.loads(_verdict_file(root).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, dict)}  # one entry per key


def cached_verdict(build: GuestBuild, qemu: str, root: Path | None = None) -> KvmVerdict | None:
    """The remembered verdict for this host, QEMU and guest kernel, if any."""
    entry = _read_all(root).get(_key(build, qemu))
    if not isinstance(entry, dict):
        return None
    try:
        return KvmVerdict(**entry)  # type: ignore[arg-type]
    except TypeError:
        return None


def probe(build: GuestBuild, qemu: str) -> KvmVerdict:
    """Boot the guest kernel once with KVM in probe mode and judge by its console. A boot
    whose console stays empty for PROBE_SILENT_S never ran the kernel: it is given up then,
    not at PROBE_TIMEOUT_S."""
    key = _key(build, qemu)
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return KvmVerdict(False, "/dev/kvm is missing or not accessible", key)
    with tempfile.TemporaryDirectory(prefix="fslab-kvm-probe-") as tmp:
        console, errors = Path(tmp) / "console", Path(tmp) / "stderr"
        # earlyprintk: the kernel's first lines reach the console within a second of a
        # working boot, so silence means the vCPU never ran it.
        argv = [qemu, "-machine", "q35", "-accel", "kvm", "-cpu", "host", "-m", "256",
                "-nodefaults", "-display", "none", "-no-reboot",
                "-serial", f"file:{console}", "-kernel", str(build.boot_kernel),
                "-initrd", str(build.initramfs),
                "-append", "console=ttyS0 earlyprintk=ttyS0 panic=-1 loglevel=4 rdinit=/init fslab.mode=probe"]
        with open(errors, "w") as stderr:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=stderr, start_new_session=True)
        try:
            failed = _wait_for_probe(proc, console)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if failed is not None:
            return KvmVerdict(False, failed, key)
        text = console.read_text(errors="replace") if console.exists() else ""
        last = (errors.read_text(errors="replace").strip().splitlines() or ["no output"])[0]
    if PROBE_MARKER in text and proc.returncode == 0:
        return KvmVerdict(True, "a stock kernel booted with -accel kvm", key)
    return KvmVerdict(False, f"QEMU exited {proc.returncode} under KVM: {last}", key)


def _wait_for_probe(proc: subprocess.Popen[bytes], console: Path) -> str | None:
    """Wait for the probe's QEMU to exit: None when it did, else why it was given up."""
    started = time.monotonic()
    while proc.poll() is None:
        waited = time.monotonic() - started
        if waited > PROBE_TIMEOUT_S:
            return f"a KVM boot did not finish in {PROBE_TIMEOUT_S:.0f} s"
        if waited > PROBE_SILENT_S and not (console.exists() and console.stat().st_size):
            return f"a KVM boot printed nothing in {PROBE_SILENT_S:.0f} s: the kernel never ran"
        time.sleep(PROBE_POLL_S)
    return None


def kvm_verdict(build: GuestBuild, root: Path | None = None, *, refresh: bool = False) -> KvmVerdict:
    """Whether to use KVM, from the cache or by probing once (then cached)."""
    qemu = shutil.which("qemu-system-x86_64")
    if qemu is None:
        return KvmVerdict(False, "qemu-system-x86_64 is not installed", "")
    if not refresh:
        cached = cached_verdict(build, qemu, root)
        if cached is not None:
            return cached
    verdict = probe(build, qemu)
    verdicts = _read_all(root)
    verdicts[verdict.key] = asdict(verdict)
    path = _verdict_file(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(verdicts, indent=2) + "\n")
    tmp.rename(path)
    return verdict
