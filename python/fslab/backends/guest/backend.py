"""The guest backend: a job runs in a QEMU guest booted from a stock Debian kernel, through
the same job entry as on the host (`python -m fslab job run`), with the host's root (and
so the same fslab, Python and tools) shared read-only.

For each job: the device kind says which virtio disks it needs (sparse images made here,
in the work directory, written in the state file first) and which ``[device]`` section the
job uses inside the guest; the folder of job folders is shared read-write at the same
path, so records and artifacts land where the runner reads them; the guest console is
kept in every run's artifacts. Within ``keep_booted`` (the local executor's whole batch)
consecutive jobs that need the same guest run in one boot (fslab.backends.guest.session),
each on fresh disks; a job on an aged image gets a copy of it on its disk, aged first as a
job of the same guest where the cache lacks it. A guest that dies
or passes its deadline fails the job's remaining runs with the console's last lines as the
reason. Each record's provenance gains ``guest``: kernel package, KVM or TCG, memory and
CPUs, boot time, and how many jobs the guest ran before this one since its boot.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...datarecords import replace
from ...errors import FslabError
from ...job.folder import CONSOLE_FILE, JobFolder, RecordWatcher, fail_unfinished
from ...kernel_log import KERNEL_IO_ERRORS
from ...stored import STATUS_OK
from .. import BACKENDS

if TYPE_CHECKING:
    from ...aged_images import AgedCopy
    from ...devices import DeviceKind
    from ...filesystems import FilesystemType
    from ...jobdata.model import Job
    from ...jobdata.record import RunRecord
    from .launcher import GuestResult
    from .session import GuestSession, JobOutcome, SessionPool

# Time a guest gets besides its runs' own limits: boot, module loading, mkfs, teardown.
GUEST_MARGIN_S = 300.0
# A run without a timeout of its own: what the deadline assumes it may take.
RUN_ALLOWANCE_S = 1800.0
INNER_WORK = "/tmp/fslab-work"  # tmpfs in the guest: mount points and scratch


class GuestBackend:
    name = "guest"

    def __init__(self) -> None:
        self._pool: SessionPool | None = None  # the guests kept booted (keep_booted)

    def unavailable(self) -> str | None:
        if shutil.which("qemu-system-x86_64") is None:
            return "qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)"
        return None

    def supports(self, fs: FilesystemType, device: DeviceKind, section: Any) -> str | None:
        if device.guest_disks is None and device.guest_passthrough is None:
            return f"a guest cannot use a {device.name} device (it belongs to the host)"
        return None

    @contextlib.contextmanager
    def keep_booted(self) -> Iterator[None]:
        """Within the block, consecutive jobs that need the same guest share one boot
        (fslab.backends.guest.session); the guest is powered off when the block ends, and
        killed if it ends in an exception (Ctrl-C too)."""
        from .session import SessionPool

        if self._pool is not None:  # nested: the outer block keeps them
            yield
            return
        self._pool = pool = SessionPool()
        try:
            yield
        except BaseException:
            pool.close(graceful=False)
            raise
        else:
            pool.close(graceful=True)
        finally:
            self._pool = None

    def execute(self, job: Job, folder: JobFolder, work_dir: Path,
                on_record: Callable[[RunRecord], None],
                on_progress: Callable[[RunRecord], None] | None = None) -> None:
        with self.keep_booted():
            assert self._pool is not None
            self._execute_in_session(self._pool, job, folder, work_dir, on_record, on_progress)

    def _execute_in_session(self, pool: SessionPool, job: Job, folder: JobFolder, work_dir: Path,
                            on_record: Callable[[RunRecord], None],
                            on_progress: Callable[[RunRecord], None] | None) -> None:
        from ...job.entry import write_job
        from ...job.serve import tool_facts
        from .launcher import GuestFailed
        from .session import SessionKey

        out_dir = folder.make().path
        work_dir.mkdir(parents=True, exist_ok=True)
        kind, section, handed, image_sizes, inner = _guest_job(job)
        key = SessionKey(kernel=job.settings.guest_kernel, memory_bytes=job.settings.guest_memory,
                         handed=tuple(handed), image_sizes=tuple(image_sizes), share=out_dir.parent)
        argv = ["run", str(folder.job_file), "--out", str(out_dir), "--work", INNER_WORK]
        started = time.time()
        # Each run shown as it ends in the guest (its record is complete only when the
        # guest's facts are known, after the job ends: stored then).
        watching = RecordWatcher(folder, on_progress) if on_progress else contextlib.nullcontext()
        try:
            session = pool.session_for(key, work_dir, work_dir / "guests", _guest_env())
            if job.cell.aging is not None and kind.image_file:
                # Aged once per key (as a job of this guest), copied onto this job's disk;
                # other device kinds are aged in place by the job itself.
                try:
                    copy = _aged_copy(inner, section.size, session, folder, work_dir)
                except FslabError as exc:
                    if exc.scope == "study":
                        raise
                    for record in fail_unfinished(job.runs, [], f"aging in the guest failed: {exc}",
                                                  started=started, provenance={"backend": "guest", "guest": {}},
                                                  folder=folder, files={CONSOLE_FILE: folder.console_file}):
                        on_record(record)
                    return
                inner = replace(inner, settings=replace(
                    inner.settings, preaged=copy.to_dict()))
            write_job(inner, folder.job_file)
            with watching:
                outcome = session.run_job(argv, _deadline(job), folder.console_file, known=tool_facts(inner))
            failure, facts, tail = _ended(job, outcome, outcome.jobs_before)
        except GuestFailed as exc:
            failure, facts, tail = str(exc).split("\n", 1)[0], {}, exc.console_tail
            _keep_failed_console(exc.console_tail, folder.console_file)
        delivered = self._deliver(folder, handed, facts, on_record)
        if pool.current is not None and any(record.status != STATUS_OK for record in delivered):
            pool.current.reusable = False  # a failed run may have left the guest in any state
        self._fail_rest(job, folder, delivered, failure, facts, tail, started, on_record)

    @staticmethod
    def _deliver(folder: JobFolder, handed: Sequence[Path], facts: dict[str, Any],
                 on_record: Callable[[RunRecord], None]) -> list[RunRecord]:
        """The job's records, each with the guest's facts, handed on; a study-level error
        of the job stops the study."""
        from ...devices.block import disk_facts

        error = folder.error()
        if error is not None and error.scope == "study":
            raise FslabError(f"in the guest: {error.message}")
        host_disks = [disk_facts(str(p)) for p in handed]
        delivered: list[RunRecord] = []
        for record in folder.records():
            _keep_console(folder.console_file, folder.path, record.artifact_dir)
            provenance = {**record.provenance, "guest": facts}
            if host_disks:  # what the guest's virtio disks really were
                provenance["device"] = {**provenance.get("device", {}), "host_disks": host_disks}
            record = replace(_with_host_reasons(record, facts), provenance=provenance)
            delivered.append(record)
            on_record(record)
        return delivered

    @staticmethod
    def _fail_rest(job: Job, folder: JobFolder, delivered: list[RunRecord], failure: str | None,
                   facts: dict[str, Any], tail: str, started: float,
                   on_record: Callable[[RunRecord], None]) -> None:
        reason = failure or "the guest ended without a record of this run"
        for record in fail_unfinished(job.runs, delivered, f"{reason}; guest console (last lines):\n{tail}",
                                      started=started, provenance={"backend": "guest", "guest": facts},
                                      folder=folder, files={CONSOLE_FILE: folder.console_file}):
            on_record(record)


def _guest_job(job: Job) -> tuple[DeviceKind, Any, list[Path], list[int], Job]:
    """The job's device kind and section, the user's disks it hands the guest (checked
    again now, as on the host), the sizes of the images to make, and the job as the
    guest runs it (its device section the guest's)."""
    from ...devices import DEVICES

    settings = job.settings
    kind = DEVICES.get(settings.device["kind"])
    section = kind.parse(settings.device)
    assert kind.guest_section is not None
    handed = [Path(p) for p in kind.guest_passthrough(section, job.grant)] if kind.guest_passthrough else []
    image_sizes = kind.guest_disks(section) if kind.guest_disks else []
    inner = replace(job, settings=replace(settings, device=kind.guest_section(section)))
    return kind, section, handed, image_sizes, inner


def _deadline(job: Job) -> float:
    return GUEST_MARGIN_S + sum(r.cell.timeout_s or RUN_ALLOWANCE_S for r in job.runs)


def _guest_env() -> dict[str, str] | None:
    # The guest sees the host's root: with PYTHONPATH it imports the very fslab this
    # process runs (a checkout), not the one installed in the venv.
    return {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else None


def _ended(job: Job, ended: JobOutcome | GuestResult, jobs_before: int) -> tuple[str | None, dict[str, Any], str]:
    """(why the job's runs it left unrecorded failed, or None; what a record's provenance
    says of the guest that ran it; the console's last lines) for a job the guest ended."""
    failure = None
    if ended.timed_out:
        failure = f"the guest was killed at its deadline of {_deadline(job):.0f} s"
    elif ended.exit_status != 0:
        failure = f"the job entry exited with status {ended.exit_status} in the guest"
    settings = job.settings
    facts: dict[str, Any] = {
        "kernel_release": ended.kernel_release, "kernel_package": ended.kernel_package,
        "accelerator": "kvm" if ended.kvm else "tcg", "memory_bytes": ended.memory_bytes,
        "cpus": ended.cpus, "boot_s": round(ended.boot_s, 3),
        "kernel_requested": settings.guest_kernel,
        # the machine QEMU ran on: reports group a guest's runs with its host's
        "vm_host": socket.gethostname(),
        "jobs_before_in_boot": jobs_before}
    if settings.guest_memory_full is not None:  # --quick kept the data-to-memory ratio
        facts["memory_scaled_from_bytes"] = settings.guest_memory_full
    if ended.abandoned_boots:  # boots the kernel stalled or panicked in, before this guest's
        facts["boots_abandoned"] = list(ended.abandoned_boots)
    if ended.host_io_errors:  # why the host refused the guest's disk requests
        facts["host_io_errors"] = list(ended.host_io_errors)
    return failure, facts, ended.console_tail


def _keep_failed_console(tail: str, console: Path) -> None:
    """A guest that failed before its console was copied: its last lines, for the records."""
    if tail and not console.exists():
        with contextlib.suppress(OSError):
            console.write_text(tail + "\n")


def _aged_copy(job: Job, size: int, session: GuestSession, folder: JobFolder, work_dir: Path) -> AgedCopy:
    """Copy the image aged for this job's key onto the session's first disk, aging it
    first if the work directory's cache lacks it: as a job of the session (`fslab job
    age` on its fresh disk), whose disk is then copied into the cache. The key adds the
    guest kernel: another kernel's allocator makes another state."""
    from ...aged_images import AGED_IMAGES_DIR, aged_image, image_key
    from ...aging import AgingReport
    from ...aging_option import AgingOption
    from ...commands import run_command
    from ...errors import JobFailed
    from ...job.entry import write_job
    from ...job.folder import AGING_ERROR, AGING_RESULT
    from .launcher import GuestFailed

    out_dir = folder.path
    cell, settings = job.cell, job.settings
    option = AgingOption.model_validate(cell.aging)
    key = json.dumps({"image": image_key(cell.fs_type, list(cell.mkfs), size, option, list(cell.mount)),
                      "guest_kernel": settings.guest_kernel}, sort_keys=True)
    # Aging writes fill x size; FUSE file systems under TCG manage ~0.4 MB/s (ntfs-3g).
    deadline = GUEST_MARGIN_S + max(RUN_ALLOWANCE_S, option.fill * size / 200e3)
    disk = session.images[0]

    def make(image: Path) -> AgingReport:
        aging_out = out_dir / f"aging-{uuid.uuid4().hex[:8]}"
        aging_out.mkdir(parents=True)
        age_job = aging_out / "age-job.json"
        write_job(job, age_job)
        argv = ["age", str(age_job), "--out", str(aging_out), "--work", INNER_WORK]
        try:
            result = session.run_job(argv, deadline, aging_out / CONSOLE_FILE, makes_records=False)
        except GuestFailed as exc:
            raise JobFailed(str(exc).split("\n", 1)[0]) from exc
        if result.exit_status == 0 and (aging_out / AGING_RESULT).exists():
            # The guest dropped its cached pages of the disk after the job: the file holds it all.
            run_command(["cp", "--sparse=always", str(disk), str(image)], timeout=3600)
            session.fresh_disks()  # the job's copy of the aged image is written onto fresh disks
            return AgingReport.from_dict(json.loads((aging_out / AGING_RESULT).read_text()))
        session.reusable = False
        if (aging_out / AGING_ERROR).exists():
            error = (aging_out / AGING_ERROR).read_text().strip() or "aging failed in the guest"
            raise JobFailed(_with_host_reason(error, result.host_io_errors) or error)
        why = (f"was killed at its deadline of {deadline:.0f} s" if result.timed_out
               else f"exited with status {result.exit_status}")
        raise JobFailed(f"the aging job in the guest {why}; console (last lines):\n{result.console_tail}")

    session.fresh_disks()  # every disk as a boot leaves it; then the first gets the copy
    return aged_image(key, make, work_dir / AGED_IMAGES_DIR, disk)


def _with_host_reasons(record: RunRecord, facts: dict[str, Any]) -> RunRecord:
    """A run the guest failed on its disk's errors (their lines in its provenance) names
    the host's reason too; any other record is left as it is."""
    if KERNEL_IO_ERRORS not in record.provenance:
        return record
    return replace(record, error=_with_host_reason(record.error, facts.get("host_io_errors", ())))


def _with_host_reason(error: str | None, reasons: Sequence[str]) -> str | None:
    """A failure on the guest's disk errors, with the host's reason as QEMU gave it."""
    if not error or not reasons:
        return error
    more = f" and {len(reasons) - 1} more" if len(reasons) > 1 else ""
    return f"{error}; the host's reason: {reasons[0]}{more}"


def _keep_console(console: Path, out_dir: Path, artifact_dir: str | None) -> None:
    if artifact_dir and console.exists():
        target = out_dir / artifact_dir
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(console, target / CONSOLE_FILE)


BACKENDS.register("guest", GuestBackend())
