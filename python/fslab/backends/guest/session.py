"""One booted guest for consecutive guest jobs: the boot and the job entry's import paid
once, not per job.

Under TCG a boot costs about 3 s and the job entry's import 2-5 s, several times a 1 s
fio run; a study whose every run needs a fresh file system (``fresh = "run"``) paid
both per run. A session keeps the guest booted while the next job needs the same guest:
the same kernel and memory, the same disks handed over, images of the same sizes and the
same folder of job folders (its share). Each job then runs in a child forked from one
server process in the guest (fslab.job.serve), and its disks are fresh as a new boot's
would be: the host punches the image files back to holes between jobs, and the child
drops the guest's cached pages of each disk before and after its job. A job on an aged
image runs in the session too: the host copies the aged image onto its disk first, and
where the cache lacks that image, ages one as a job of the session before.

A session ends (the guest powered off, the images removed) when the next job needs
another guest, when a job's process ended in an error or the guest died or passed a
job's deadline (a guest in an unknown state runs nothing more), when a job of it had a
failed run, and when the pool closes (the local executor closes it when a job of another
backend comes: nothing is measured beside an idle guest); on Ctrl-C or any exception QEMU
is killed.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shlex
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...resources import Resource, register, release, tracked
from .hang import kernel_hang
from .init_script import AGENT_BEAT_S
from .launcher import Guest, GuestConfig, GuestFailed, agent_mark, console_tail, read_or_empty

SERVE_DIR = "serve"  # in the guest's control folder (/run/fslab/ctl in the guest)
GUEST_CONTROL = "/run/fslab/ctl"
SERVER_START_S = 120.0
POLL_S = 0.02
HANG_LOOK_S = 5.0  # how often the console is read for a hung kernel (and the agent's mark looked at)
# A guest whose agent has not renewed its alive mark for this long (by the host's monotonic
# clock, from the job's start or the last new mark) is frozen: its vCPUs make no progress
# while QEMU runs on. 24 times the agent's beat: the agent needs only a moment of a vCPU
# per beat, which even a guest busy on both vCPUs under TCG on a loaded host gives it.
FROZEN_AFTER_S = 120.0
_FALLOC_FL_KEEP_SIZE = 0x01
_FALLOC_FL_PUNCH_HOLE = 0x02


@dataclass(frozen=True)
class SessionKey:
    """What a job needs of its guest; a job with another key needs another guest."""

    kernel: str
    memory_bytes: int
    handed: tuple[Path, ...]       # the user's disks, /dev/vda... first
    image_sizes: tuple[int, ...]   # images made for the session, after them
    share: Path                    # the folder of job folders, shared read-write


@dataclass(frozen=True)
class JobOutcome:
    """One job run in a session's guest, and what its record's provenance says of the guest."""

    exit_status: int | None  # None: the job did not finish
    timed_out: bool
    console_tail: str
    host_io_errors: tuple[str, ...]  # the host's reasons for disk requests refused during it
    kvm: bool
    kernel_release: str
    kernel_package: str
    memory_bytes: int
    cpus: int
    boot_s: float
    jobs_before: int  # jobs this guest ran before this one since its boot
    abandoned_boots: tuple[str, ...] = ()  # boots abandoned before this guest's (its first job with records)


class ImageDisks:
    """Sparse image files for the guest's virtio disks, in the state file while they
    exist, removed afterwards (also on errors and Ctrl-C)."""

    def __init__(self, sizes: list[int], work_dir: Path):
        self.paths = [work_dir / f"fslab-guestdisk-{uuid.uuid4().hex[:8]}-{i}.img" for i in range(len(sizes))]
        self.sizes = sizes
        self.tokens: list[int] = []

    def __enter__(self) -> list[Path]:
        from ...devices.image import check_free_space

        if self.paths:
            check_free_space(self.paths[0].parent, sum(self.sizes))
        for path, size in zip(self.paths, self.sizes):
            self.tokens.append(register(Resource("image", str(path), str(path.parent))))
            with open(path, "wb") as f:
                f.truncate(size)
        return self.paths

    def __exit__(self, *exc: object) -> None:
        for path, token in zip(self.paths, self.tokens):
            path.unlink(missing_ok=True)
            release(token)


def punch_out(image: Path) -> None:
    """Make an image all holes again (reads return zeros), keeping its size and inode:
    QEMU keeps it open. Where the file system cannot punch, truncating does the same."""
    libc = ctypes.CDLL(None, use_errno=True)
    size = image.stat().st_size
    fd = os.open(image, os.O_WRONLY)
    try:
        if libc.fallocate(fd, _FALLOC_FL_PUNCH_HOLE | _FALLOC_FL_KEEP_SIZE, ctypes.c_long(0),
                          ctypes.c_long(size)) != 0:
            os.ftruncate(fd, 0)
            os.ftruncate(fd, size)
    finally:
        os.close(fd)


class GuestSession:
    """A guest booted for ``key``, with its images and its job server. Use ``start`` and
    ``close``, or as a context manager."""

    def __init__(self, key: SessionKey, work_dir: Path, guests: Path, env: dict[str, str] | None):
        self.key = key
        self.reusable = True
        self._work_dir = work_dir
        self._guests = guests
        self._env = env
        self._stack = contextlib.ExitStack()
        self.guest: Guest | None = None
        self.images: list[Path] = []
        self._jobs = 0
        self._disks_used = False  # a job ran on the images since they were last made fresh
        self._boots_told = False  # the abandoned boots went into a job's records

    def __enter__(self) -> GuestSession:
        return self.start()

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.close(graceful=exc_type is None)

    def start(self) -> GuestSession:
        try:
            self.images = self._stack.enter_context(ImageDisks(list(self.key.image_sizes), self._work_dir))
            # Written down first: if this process dies, `fslab cleanup` kills the guest's QEMU.
            self._stack.enter_context(tracked("guests", str(self._guests), self._work_dir))
            config = GuestConfig(kernel=self.key.kernel, memory_bytes=self.key.memory_bytes,
                                 disks=(*self.key.handed, *self.images), shares={"out": self.key.share},
                                 run_root=self._guests)
            self.guest = self._stack.enter_context(Guest(config))
            self._start_server()
        except BaseException:
            self.close(graceful=False)
            raise
        return self

    @property
    def _serve_dir(self) -> Path:
        assert self.guest is not None
        return self.guest.control_folder / SERVE_DIR

    def _start_server(self) -> None:
        assert self.guest is not None
        self._serve_dir.mkdir()
        inner = f"{GUEST_CONTROL}/{SERVE_DIR}"
        # In the background, so the agent stays free to power the guest off; `exited`
        # says the server is gone, however it ended.
        script = (f"({shlex.quote(sys.executable)} -m fslab.job serve {inner}; echo $? > {inner}/exited) "
                  f"> {inner}/server.log 2>&1 < /dev/null &")
        started = self.guest.run(["sh", "-c", script], SERVER_START_S, env=self._env)
        if started.exit_status != 0:
            raise GuestFailed(f"the job server did not start in the guest: {started.stderr.strip()[-800:]}",
                              self.guest.console_tail())

    def fresh_disks(self) -> None:
        """Make the images all holes again if a job has used them since they were made or
        last made fresh (the host may then write a disk's starting state onto one)."""
        if self._disks_used:
            for image in self.images:
                punch_out(image)
            self._disks_used = False

    def run_job(self, argv: Sequence[str], deadline_s: float, console: Path,
                makes_records: bool = True, known: dict[str, Any] | None = None) -> JobOutcome:
        """Run ``python -m fslab.job ARGV`` in the guest, its disks fresh unless the host
        wrote onto them since the last job; the guest's console while it ran (the boot's
        too, for the first job) goes to ``console``. The boots abandoned before this guest's
        go to the first job that ``makes_records`` (an aging job makes none). ``known``: the
        job's tool facts, worked out on the host (fslab.job.serve.tool_facts)."""
        guest = self.guest
        assert guest is not None and guest.console_path is not None and guest.build is not None
        n, jobs_before = self._jobs, self._jobs
        self._jobs += 1
        self.fresh_disks()
        self._disks_used = True
        abandoned = () if self._boots_told or not makes_records else tuple(guest.abandoned_boots)
        self._boots_told = self._boots_told or makes_records
        console_from = 0 if jobs_before == 0 else _size(guest.console_path)
        errors_from = len(guest.host_io_errors)
        request: dict[str, Any] = {"argv": list(argv), "disks": [
            f"/dev/vd{chr(ord('a') + i)}" for i in range(len(self.key.handed) + len(self.images))]}
        if known:
            request["known"] = known
        tmp = self._serve_dir / f".req-{n}.json"
        tmp.write_text(json.dumps(request))
        tmp.rename(self._serve_dir / f"req-{n}.json")
        status, timed_out = self._wait(n, deadline_s)
        if status != 0:
            self.reusable = False
        _copy_from(guest.console_path, console_from, console)
        return JobOutcome(status, timed_out, console_tail(console), tuple(guest.host_io_errors[errors_from:]),
                          guest.kvm, guest.build.release, guest.build.package, self.key.memory_bytes,
                          guest.cpus, guest.boot_s, jobs_before, abandoned)

    def _wait(self, n: int, deadline_s: float) -> tuple[int | None, bool]:
        guest = self.guest
        assert guest is not None
        status_file = self._serve_dir / f"status-{n}"
        started = time.monotonic()
        console = guest.console_path
        console_seen = _size(console) if console else 0
        next_look = started + HANG_LOOK_S
        mark, marked_at = agent_mark(guest.control_folder), started
        while not status_file.exists():
            if console is not None and time.monotonic() > next_look:  # a hung kernel ends it now
                next_look = time.monotonic() + HANG_LOOK_S
                text, console_seen = _lines_from(console, console_seen)  # only what came since
                if (hang := kernel_hang(text)) is not None:
                    self.reusable = False
                    guest.kill()
                    raise GuestFailed(hang, guest.console_tail())
                now, latest = time.monotonic(), agent_mark(guest.control_folder)
                if latest != mark:
                    mark, marked_at = latest, now
                elif mark is not None and now - marked_at > FROZEN_AFTER_S:
                    self.reusable = False
                    guest.kill()
                    raise GuestFailed(
                        f"the guest froze: its agent, which marks it alive every {AGENT_BEAT_S} s, "
                        f"had not done so for {now - marked_at:.0f} s while its QEMU process lived on; the "
                        f"guest was killed {now - started:.0f} s into the job, not at its deadline",
                        guest.console_tail())
            if not guest.alive:
                self.reusable = False
                raise GuestFailed("the guest died while it ran the job", guest.console_tail())
            if (self._serve_dir / "exited").exists() and not status_file.exists():
                self.reusable = False
                raise GuestFailed(server_gone(self._serve_dir), guest.console_tail())
            if time.monotonic() - started > deadline_s:
                self.reusable = False
                guest.kill()
                return None, True
            time.sleep(POLL_S)
        return int(status_file.read_text().strip()), False

    def close(self, graceful: bool) -> None:
        """Power the guest off (``graceful``) or kill it, and remove the images."""
        self.reusable = False
        if not graceful and self.guest is not None:
            self.guest.kill()
        self._stack.close()
        self.guest = None


class SessionPool:
    """At most one open session: the one the last job used, kept for the next."""

    def __init__(self) -> None:
        self._session: GuestSession | None = None

    @property
    def current(self) -> GuestSession | None:
        return self._session

    def session_for(self, key: SessionKey, work_dir: Path, guests: Path,
                    env: dict[str, str] | None) -> GuestSession:
        current = self._session
        if current is not None and (current.key != key or not current.reusable or current.guest is None
                                    or not current.guest.alive):
            self._session = None
            current.close(graceful=current.guest is not None and current.guest.alive)
        if self._session is None:
            self._session = GuestSession(key, work_dir, guests, env).start()
        return self._session

    def close(self, graceful: bool) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            session.close(graceful)


def server_gone(serve_dir: Path) -> str:
    """Why the job server is gone: its exit status (as its shell saw it) and its output."""
    status = read_or_empty(serve_dir / "exited").strip()
    how = f" with status {status}" if status else ""
    if status.isdigit() and int(status) > 128:  # a shell's way of saying "killed by signal N"
        how += f" (killed by signal {int(status) - 128}, e.g. by the guest's OOM killer"
        how += "; more guest_memory in [study] gives it room)" if int(status) == 128 + 9 else ")"
    log = read_or_empty(serve_dir / "server.log").strip()[-800:]
    return f"the job server in the guest exited{how}: {log or '(no output)'}"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _lines_from(path: Path, offset: int) -> tuple[str, int]:
    """The whole lines of ``path`` from ``offset`` on, and the offset after them (a line
    still being written is left for the next look)."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except OSError:
        return "", offset
    end = data.rfind(b"\n") + 1
    return data[:end].decode(errors="replace"), offset + end


def _copy_from(source: Path, offset: int, dest: Path) -> None:
    """The bytes of ``source`` from ``offset`` on, as ``dest``."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError), open(source, "rb") as src, open(dest, "wb") as out:
        src.seek(offset)
        while chunk := src.read(1 << 20):
            out.write(chunk)
