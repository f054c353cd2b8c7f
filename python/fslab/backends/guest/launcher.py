"""Booting a guest in QEMU and running commands in it.

``with Guest(config) as g: g.run(argv, timeout_s)`` boots once and runs any number of
commands; ``run_in_guest(config, argv, deadline_s)`` boots, runs one command and powers
off. Commands and their results travel through a control folder shared over virtio-9p
(see init_script.py): the exit status comes back as a file the guest renames into place,
so it is never lost in console noise.

Disks are raw image files on virtio-blk with ``cache=none`` (O_DIRECT on the host): the
guest's own page cache is then the only one, so the guest's memory really is the
page-cache knob and a flush in the guest reaches the image, not the host's page cache.
An image on a file system without O_DIRECT (tmpfs) needs ``disk_cache="writeback"``.

Nothing outlives a guest: teardown kills QEMU's process group on any exception, Ctrl-C
or SIGTERM (fslab turns SIGTERM into an exception); QEMU gets SIGKILL if its parent dies
(PR_SET_PDEATHSIG); and a state file lets ``cleanup_guests`` find it in any case.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ...errors import FslabError, MissingCapability, SpecError
from ...signals import shielded
from ...spec import GUEST_MIN_MEMORY
from . import paths
from .build import GuestBuild, build
from .hang import STALLED_BOOT_S, kernel_hang, kernel_panic
from .init_script import ALIVE_FILE
from .kernel import config_hz
from .kvm import kvm_verdict
from .qmp import QmpEvents
from .reaper import GuestState, kill_qemu, process_start_ticks

GiB = 1 << 30
MiB = 1 << 20
CONSOLE_TAIL_LINES = 40
QMP_SOCKET = "qmp.sock"  # in the guest's run folder, QEMU's working directory
_PR_SET_PDEATHSIG = 1
# cryptomgr.notests: the kernel's boot-time self-tests of its crypto algorithms (results
# only logged; no algorithm changes) took 1.3 s of a TCG boot in crypto_algapi_init, 0.24 s
# without them (initcall_debug, one boot each, host load about 14). The rest cut what a
# TCG boot spent on things no run sees (printk timestamps with initcall_debug, 6.1):
# initcall_blacklist=crypto_kdf108_init, the SP800-108 KDF's self-test (all that initcall
# does), 0.14 s, and blake2s_mod_init, BLAKE2s's self-test (likewise), 0.01 s;
# 8250.nr_uarts=1, the console's UART only, not four probed; ipv6.disable=1, the IPv6
# stack's setup (inet6_init, 0.14 s): the guest has no network device; init_encrypted,
# the "encrypted" key type and the HMAC and AES transforms it allocates at boot, 0.03 s
# (mean of 3 boots, host load 4; 0.04-0.16 s at load 11), a key type no run uses (zswap's
# init, 0.01 s, is left). Not rodata=off (0.31 s): the measuring kernel's text would be
# writable and its memory mapped otherwise than in a stock boot.
KERNEL_ARGS = ("console=ttyS0 panic=-1 loglevel=4 rdinit=/init cryptomgr.notests "
               "initcall_blacklist=crypto_kdf108_init,blake2s_mod_init,init_encrypted 8250.nr_uarts=1 "
               "ipv6.disable=1")
# q35 without the chipset parts no guest uses: the PS/2 controller (and VMware's port on
# it), whose keyboard probe took 0.1 s of a TCG boot; the AHCI (SATA) and SMBus functions,
# which the firmware initialises and the kernel enumerates for nothing (disks are
# virtio-blk); SMM, which the firmware sets up and the kernel never enters.
MACHINE = "q35,i8042=off,vmport=off,sata=off,smbus=off,smm=off"
# A boot the kernel failed before ready (a soft lockup of hang.STALLED_BOOT_S, or a panic)
# is abandoned and made again, once: no run has started. Both were seen under TCG on a
# loaded host, once each in a few hundred boots, and not repeated by the next boot: a 6.1
# CPU stuck in the kernel's init task from ~3 s on, and a 6.12 vCPU faulting one byte past
# a static-branch site the other vCPU was patching (TCG and cross-vCPU code patching).
BOOT_ATTEMPTS = 2
# Under TCG the firmware is qboot (QEMU's minimal one, in its data folder beside SeaBIOS)
# where QEMU ships it. QEMU's start to the kernel's first console line (earlyprintk, host
# clock): median 0.23 s with SeaBIOS, 0.21 s with qboot at host load 2.5 (4 boots each,
# alternated); 1.16 s and 0.55 s at load 14 (3 each): SeaBIOS's PCI set-up, option-ROM
# scan and PVH loader ROM run emulated. What differs for the kernel: it assigns the PCI
# BARs itself and finds the MTRRs blank, so it leaves PAT at its power-on setting (no
# write-combining); TCG models no caches, so memory types change nothing a run could see.
# Not under KVM, where they would.
TCG_FIRMWARE = "qboot.rom"
# A TCG guest gets one vCPU unless asked for more. Two emulated vCPUs burn host CPU waiting
# for each other (a vCPU spinning on a lock, or for an IPI's answer, held by a vCPU thread
# the host has descheduled), and the more so the busier the host: the vfat aging test of
# tests/guest/test_guest_alloc.py (aging, layout, alloc runs) took 56 s of wall time and
# 60 s of CPU with two vCPUs on a quiet 2-core host, 110-123 s and 107-120 s beside one busy
# host process; with one vCPU 45 s and 43 s quiet, 57-59 s and 54-55 s beside it (runs
# alternated). Under KVM the vCPUs are the host's cores: two there.
TCG_CPUS = 1
KVM_CPUS = 2
TSC_FILE = "tsc_mhz"  # the guest's TSC rate, in its control folder and in the cache root


class GuestFailed(FslabError):
    """The guest did not boot, died, hung or froze, or was killed at its deadline. Keeps
    the console tail."""

    def __init__(self, message: str, console_tail: str):
        self.console_tail = console_tail
        super().__init__(f"{message}\n--- guest console (last lines) ---\n{console_tail}")


class KernelFailedBoot(GuestFailed):
    """The kernel stalled or panicked before the guest was ready."""


@dataclass(frozen=True)
class GuestConfig:
    """What to boot. Sizes in bytes, times in seconds.

    ``shares`` maps a 9p tag to a host folder; the guest mounts it read-write at the same
    path, so paths in a job file mean the same inside and out. ``disks`` (image files or
    host block devices handed over) become /dev/vda, /dev/vdb, ... in order."""

    kernel: str = "6.1"
    memory_bytes: int = 1 * GiB
    # None: 2 vCPUs under KVM, 1 under TCG (TCG_CPUS).
    cpus: int | None = None
    disks: tuple[Path, ...] = ()
    shares: Mapping[str, Path] = field(default_factory=dict)
    console_path: Path | None = None
    disk_cache: Literal["none", "writeback"] = "none"
    accel: Literal["auto", "kvm", "tcg"] = "auto"
    boot_timeout_s: float = 180.0
    tcg_cpu: str = "max"             # QEMU CPU model under TCG (see _qemu_argv)
    run_root: Path | None = None     # where the guest's run folder goes (default: cache)
    die_with_parent: bool = True     # PR_SET_PDEATHSIG; off only to test cleanup_guests

    def check(self) -> None:
        """Reject what QEMU would fail on later, naming the field and the fix."""
        if self.memory_bytes < GUEST_MIN_MEMORY:
            raise SpecError("at least 256MiB: the guest kernel and Python need it",
                            field="guest_memory")
        for disk in self.disks:
            if not disk.is_file() and not disk.is_block_device():
                raise SpecError(f"disk {disk} is neither an image file nor a block device", field="disks")
            if self.disk_cache == "none" and not _supports_direct_io(disk):
                raise SpecError(f"{disk} cannot be opened with O_DIRECT (tmpfs?); put images on "
                                "a disk file system or use disk_cache = \"writeback\"",
                                field="disk_cache")
        for tag, folder in self.shares.items():
            if tag in ("hostroot", "modules", "fslabctl") or not tag.replace("_", "").isalnum():
                raise SpecError(f"share tag {tag!r} is reserved or not alphanumeric",
                                field="shares")
            if not Path(folder).is_absolute() or not Path(folder).is_dir():
                raise SpecError(f"share {tag!r}: {folder} is not an existing absolute folder",
                                field="shares")


def _supports_direct_io(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError:
        return False
    os.close(fd)
    return True


@dataclass(frozen=True)
class CommandResult:
    """One command run in the guest. ``exit_status`` is None when it did not finish."""

    argv: tuple[str, ...]
    exit_status: int | None
    stdout: str
    stderr: str
    wall_s: float
    timed_out: bool


@dataclass(frozen=True)
class GuestResult:
    """What ``run_in_guest`` returns: the command's outcome and the guest's provenance."""

    exit_status: int | None
    timed_out: bool
    stdout: str
    stderr: str
    console_tail: str
    kvm: bool
    kernel_release: str
    kernel_package: str
    memory_bytes: int
    cpus: int
    boot_s: float
    command_s: float
    # The host's reasons for disk requests it refused (QEMU's BLOCK_IO_ERROR events).
    host_io_errors: tuple[str, ...] = ()
    abandoned_boots: tuple[str, ...] = ()  # boots abandoned before this guest's (Guest.abandoned_boots)


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _compile_fslab() -> None:
    """Write fslab's own bytecode beside its sources (only what is out of date): the guest
    sees the host's root read-only and would compile every module of fslab again in every
    guest where the host never wrote it (PYTHONDONTWRITEBYTECODE). Measured in one TCG
    guest, host busy: the job entry's import took 6.3-8.8 s this way, 16.6-19.7 s with
    the bytecode on a 9p share of its own instead (PYTHONPYCACHEPREFIX: every lookup
    uncached). A package folder this process cannot write is left as it is."""
    import compileall

    import fslab

    with contextlib.suppress(OSError):
        compileall.compile_dir(Path(fslab.__file__).parent, quiet=2)


def tcg_lpj(guest_build: GuestBuild) -> str:
    """`` lpj=N`` for a TCG boot, or "" before any guest booted on this host since its
    own boot (or for a kernel without its config).

    Without it, the guest's second vCPU calibrates its delay loop by counting against
    timer ticks: 0.19-1.25 s of a TCG boot (the more the host is loaded, the longer), for
    a value that came out anywhere from a third of the first vCPU's to 1.2x it (1343-5050
    BogoMIPS against 4196 in four boots; TCG offers no invariant TSC, so the kernel cannot
    reuse the first vCPU's). With lpj both take the TSC rate the guest's
    boot vCPU measured in an earlier boot here (a guest's TSC is the host's under TCG),
    which is what the boot vCPU derives its own value from: the bring-up then took
    0.03-0.06 s."""
    hz = config_hz(guest_build.vmlinuz, guest_build.release)
    try:
        boot_id, mhz = (paths.cache_root() / TSC_FILE).read_text().split()
        if hz is None or boot_id != _host_boot_id():
            return ""
        return f" lpj={round(float(mhz) * 1e6 / hz)}"
    except (OSError, ValueError):
        return ""


def tcg_firmware(qemu: str) -> list[str]:
    """``-bios`` qboot for a TCG guest (see TCG_FIRMWARE), or [] (SeaBIOS) where this QEMU
    has no qboot in its data folder."""
    rom = Path(qemu).resolve().parent.parent / "share" / "qemu" / TCG_FIRMWARE
    return ["-bios", str(rom)] if rom.is_file() else []


def _host_boot_id() -> str:
    return Path("/proc/sys/kernel/random/boot_id").read_text().strip()


def _remember_tsc(reported: Path) -> None:
    """Keep the TSC rate (MHz) a TCG guest reported (init_script.AGENT) for tcg_lpj."""
    with contextlib.suppress(OSError, ValueError):
        mhz = float(reported.read_text())
        if not 100 <= mhz <= 100_000:
            return
        target = paths.cache_root() / TSC_FILE
        tmp = target.with_name(f".{TSC_FILE}.{os.getpid()}")
        tmp.write_text(f"{_host_boot_id()} {mhz:.3f}\n")
        tmp.rename(target)


def _q(path: Path) -> str:
    """A path inside a QEMU option string, where a comma must be doubled."""
    return str(path).replace(",", ",,")


def read_or_empty(path: Path) -> str:
    """A file the guest writes (through a share or the console), or "" while it is not there."""
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def agent_mark(control_folder: Path) -> int | None:
    """The guest agent's last alive mark (init_script.AGENT_BEAT_S) as its file's mtime in
    ns, None before the first. Only compared with an earlier one: whoever stamps it (the
    host, or a file server under the folder) and however its clock is set, a new mark
    differs from the last."""
    try:
        return (control_folder / ALIVE_FILE).stat().st_mtime_ns
    except OSError:
        return None


def console_tail(path: Path, lines: int = CONSOLE_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no console output)"
    return "\n".join(text.replace("\r", "").splitlines()[-lines:])


class Guest:
    """A booted guest. Use as a context manager; ``run`` commands inside it."""

    def __init__(self, config: GuestConfig, guest_build: GuestBuild | None = None):
        config.check()
        self.config = config
        self.build = guest_build
        self.kvm = False
        self.kvm_reason = ""
        self.cpus = config.cpus or TCG_CPUS  # the guest's vCPUs: settled at boot, with KVM or not
        self.boot_s = 0.0
        self._proc: subprocess.Popen[bytes] | None = None
        self._state: GuestState | None = None
        self._folder: Path | None = None
        self._next = 0
        self.console_path: Path | None = None
        self.last_console_tail = ""  # kept when the run folder (and its console) goes
        self._qmp: QmpEvents | None = None
        self._host_io_errors: list[str] = []  # kept when the guest is torn down
        self.abandoned_boots: list[str] = []  # why each abandoned boot before this one was

    # -- lifecycle ---------------------------------------------------------------------
    def __enter__(self) -> Guest:
        try:
            for _ in range(BOOT_ATTEMPTS - 1):
                try:
                    self._boot()
                    return self
                except KernelFailedBoot as failed:
                    self._teardown(graceful=False)
                    self.abandoned_boots.append(str(failed).split("\n", 1)[0])
            self._boot()  # the last attempt: whatever it raises is the guest's failure
        except BaseException:
            self._teardown(graceful=False)
            raise
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self._teardown(graceful=exc_type is None)

    @property
    def control_folder(self) -> Path:
        """The host's side of the folder the guest sees as /run/fslab/ctl."""
        if self._folder is None:
            raise GuestFailed("the guest is not running", self.console_tail())
        return self._folder / "ctl"

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _qemu_argv(self, qemu: str, folder: Path) -> list[str]:
        assert self.build is not None and self.console_path is not None  # both set when the guest starts
        c = self.config
        argv = [qemu, "-machine", MACHINE, "-m", str(c.memory_bytes // MiB), "-smp", str(self.cpus),
                "-nodefaults", "-display", "none", "-no-reboot", "-no-user-config",
                "-serial", f"file:{_q(self.console_path)}",
                "-kernel", str(self.build.boot_kernel), "-initrd", str(self.build.initramfs),
                "-append", KERNEL_ARGS + ("" if self.kvm else tcg_lpj(self.build)),
                "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,"
                           "multidevs=remap",
                "-virtfs", f"local,path={_q(self.build.modules)},mount_tag=modules,"
                           "security_model=none,readonly=on",
                "-virtfs", f"local,path={_q(folder / 'ctl')},mount_tag=fslabctl,security_model=none"]
        # The host's reasons for refused disk requests (qmp.py). A relative path: QEMU runs
        # in the guest's run folder (removed with it, also by `fslab cleanup`), whose full
        # path may not fit in a unix socket's 108 bytes; it is reached via /proc/PID/cwd.
        argv += ["-qmp", f"unix:{QMP_SOCKET},server=on,wait=off"]
        # TCG's default CPU model (qemu64) lacks SSE4.2 and POPCNT, which wheels such as
        # pyarrow's take for granted ("Illegal instruction"); "max" offers all TCG can do.
        argv += ["-accel", "kvm", "-cpu", "host"] if self.kvm else ["-accel", "tcg", "-cpu", c.tcg_cpu]
        if not self.kvm:
            argv += tcg_firmware(qemu)
        for tag, host in c.shares.items():
            argv += ["-virtfs", f"local,path={_q(host)},mount_tag={tag},security_model=none,"
                                "multidevs=remap"]
        for i, disk in enumerate(c.disks):
            # A host block device handed over (a user's disk): native AIO, as a raw disk
            # would be used, where cache=none allows it (O_DIRECT).
            aio = ",aio=native" if c.disk_cache == "none" and disk.is_block_device() else ""
            # werror/rerror=report: a request the host refuses fails in the guest (which
            # fails the run, fslab.kernel_log); QEMU's default pauses the guest on ENOSPC,
            # which would then sit until the job's deadline.
            argv += ["-drive", f"if=none,id=disk{i},file={_q(disk)},format=raw,cache={c.disk_cache}{aio},"
                               "werror=report,rerror=report",
                     "-device", f"virtio-blk-pci,drive=disk{i},serial=fslab-disk{i}"]
        return argv

    def _boot(self) -> None:
        qemu = shutil.which("qemu-system-x86_64")
        if qemu is None:
            raise MissingCapability("qemu-system-x86_64 is not installed (the guest backend "
                                    "needs it)", fix="apt-get install qemu-system-x86")
        if self.build is None:
            self.build = build(self.config.kernel)
        if self.config.accel == "auto":
            verdict = kvm_verdict(self.build)
            self.kvm, self.kvm_reason = verdict.usable, verdict.reason
        else:
            self.kvm, self.kvm_reason = self.config.accel == "kvm", "asked for"
        self.cpus = self.config.cpus or (KVM_CPUS if self.kvm else TCG_CPUS)
        root = self.config.run_root or paths.run_dir()
        root.mkdir(parents=True, exist_ok=True)
        self._folder = Path(tempfile.mkdtemp(prefix=f"guest-{os.getpid()}-", dir=root))
        ctl = self._folder / "ctl"
        ctl.mkdir()
        (ctl / "shares").write_text("".join(f"{tag} {path}\n"
                                            for tag, path in self.config.shares.items()))
        _compile_fslab()
        console = self.console_path = self.config.console_path or self._folder / "console.log"
        console.parent.mkdir(parents=True, exist_ok=True)
        console.write_bytes(b"")
        started = time.monotonic()
        with shielded(), open(self._folder / "qemu.stderr", "wb") as stderr:
            # Shielded: the state file must name the QEMU we start, whatever happens.
            self._proc = subprocess.Popen(
                self._qemu_argv(qemu, self._folder), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True, cwd=self._folder,
                preexec_fn=_die_with_parent if self.config.die_with_parent else None)
            self._state = GuestState(self._proc.pid, process_start_ticks(self._proc.pid),
                                     os.getpid(), process_start_ticks(os.getpid()),
                                     str(self._folder))
            self._state.write()
        self._qmp = QmpEvents(Path(f"/proc/{self._proc.pid}/cwd") / QMP_SOCKET).start()
        deadline = started + self.config.boot_timeout_s
        next_look = started + 1.0
        while not (ctl / "ready").exists():
            if self._proc.poll() is not None:
                panic = kernel_panic(read_or_empty(console))
                failure = KernelFailedBoot if panic else GuestFailed
                raise failure(f"the guest exited during boot (QEMU status {self._proc.returncode})"
                              + (f": {panic}" if panic else f": {self._qemu_stderr()}"),
                              self.console_tail())
            now = time.monotonic()
            if now > deadline:
                raise GuestFailed(f"the guest did not boot within {self.config.boot_timeout_s:.0f} s",
                                  self.console_tail())
            if now >= next_look:  # the console is small before ready: read it whole, each second
                next_look = now + 1.0
                stall = kernel_hang(read_or_empty(console), STALLED_BOOT_S)
                if stall is not None:
                    raise KernelFailedBoot(f"{stall}, during boot: abandoned after {now - started:.0f} s",
                                           self.console_tail())
            time.sleep(0.05)
        self.boot_s = time.monotonic() - started
        if not self.kvm:
            _remember_tsc(ctl / TSC_FILE)

    @property
    def host_io_errors(self) -> list[str]:
        """The host's reasons for the disk requests it refused so far (qmp.py)."""
        return list(self._qmp.errors) if self._qmp is not None else list(self._host_io_errors)

    def _qemu_stderr(self) -> str:
        assert self._folder is not None
        with contextlib.suppress(OSError):
            return (self._folder / "qemu.stderr").read_text(errors="replace").strip()[-500:]
        return ""

    def console_tail(self, lines: int = CONSOLE_TAIL_LINES) -> str:
        return console_tail(self.console_path, lines) if self.console_path else ""

    def _teardown(self, graceful: bool) -> None:
        with shielded():
            if self._proc is not None and self._proc.poll() is None and graceful and self._folder:
                (self._folder / "ctl" / "shutdown").touch()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._proc.wait(timeout=30)
            if self._state is not None:
                kill_qemu(self._state)
            if self._proc is not None:
                self._proc.wait()
            if self._qmp is not None:
                self._qmp.stop()
                self._host_io_errors = list(self._qmp.errors)
                self._qmp = None
            if self._folder is not None:
                self.last_console_tail = self.console_tail()
                shutil.rmtree(self._folder, ignore_errors=True)
                self._folder = None

    def kill(self) -> None:
        """Stop the guest now (SIGKILL to QEMU's process group)."""
        if self._state is not None:
            kill_qemu(self._state)
        if self._proc is not None:
            self._proc.wait()

    # -- commands ----------------------------------------------------------------------
    def run(self, argv: Sequence[str], timeout_s: float, *, env: Mapping[str, str] | None = None,
            cwd: str = "/") -> CommandResult:
        """Run argv in the guest with /bin/sh semantics for env and cwd. At ``timeout_s``
        the whole guest is killed (a hung command may well be a hung kernel): the result
        says ``timed_out`` and later calls raise GuestFailed."""
        if not self.alive or self._folder is None:
            raise GuestFailed("the guest is not running", self.console_tail())
        ctl = self._folder / "ctl"
        n = self._next
        self._next += 1
        script = [f"export {k}={shlex.quote(v)}" for k, v in (env or {}).items()]
        script += [f"cd {shlex.quote(cwd)} || exit 125", "exec " + shlex.join(argv)]
        tmp = ctl / f".cmd-{n}.sh"
        tmp.write_text("\n".join(script) + "\n")
        tmp.rename(ctl / f"cmd-{n}.sh")
        started = time.monotonic()
        status_file = ctl / f"status-{n}"
        while not status_file.exists():
            if time.monotonic() - started > timeout_s:
                self.kill()
                return CommandResult(tuple(argv), None, read_or_empty(ctl / f"out-{n}"),
                                     read_or_empty(ctl / f"err-{n}"), time.monotonic() - started, True)
            if self._proc is not None and self._proc.poll() is not None:
                raise GuestFailed(f"the guest died while running {shlex.join(argv)}",
                                  self.console_tail())
            time.sleep(0.02)
        wall = time.monotonic() - started
        status = int(status_file.read_text().strip())
        return CommandResult(tuple(argv), status, read_or_empty(ctl / f"out-{n}"),
                             read_or_empty(ctl / f"err-{n}"), wall, False)

    def check_output(self, argv: Sequence[str], timeout_s: float = 120) -> str:
        """stdout of a command that must succeed; GuestFailed with its stderr otherwise."""
        r = self.run(argv, timeout_s)
        if r.exit_status != 0:
            why = "timed out" if r.timed_out else f"exited {r.exit_status}"
            raise GuestFailed(f"`{shlex.join(argv)}` {why} in the guest: {r.stderr.strip()[-800:]}",
                              self.console_tail())
        return r.stdout


def run_in_guest(config: GuestConfig, argv: Sequence[str], deadline_s: float,
                 guest_build: GuestBuild | None = None) -> GuestResult:
    """Boot, run one command, power off. A command still running at ``deadline_s`` (from
    the start of the command) is killed with the guest; the result says so."""
    guest = Guest(config, guest_build)
    # The guest sees the host's root: with PYTHONPATH it imports the very fslab this
    # process runs (a checkout), not the one installed in the venv.
    env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else None
    with guest:
        r = guest.run(argv, deadline_s, env=env)
    tail = guest.last_console_tail
    assert guest.build is not None
    return GuestResult(r.exit_status, r.timed_out, r.stdout, r.stderr, tail, guest.kvm,
                       guest.build.release, guest.build.package, config.memory_bytes,
                       guest.cpus, guest.boot_s, r.wall_s, tuple(guest.host_io_errors),
                       tuple(guest.abandoned_boots))
