"""The job entry: one job (JSON) in, records and artifacts out (``fslab job run JOB --out
FOLDER``); and ``fslab job age``, which only makes and ages a job's file system.

The host backend, a guest and a remote worker all execute jobs through ``run_job``, so a
run never depends on in-process state of the runner and storing happens only from
records. Each record is appended to the folder's ``records.jsonl`` as its run ends, so a
job killed half-way keeps what finished. A study-level error (device refused, missing
tool, results disk full) is written to ``error.json`` before it propagates, so a caller
in another process stops the study with the same words.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import STUDY_LEVEL_ERRNOS, FslabError, ResultsUnwritable
from ..jobdata.model import Job
from ..jobdata.record import RunRecord
from .folder import AGING_ERROR, AGING_RESULT, JobFolder

if TYPE_CHECKING:
    from ..aging import AgingReport


def load_job(path: Path) -> Job:
    """Read a job file; a file that is not a job is an FslabError naming it."""
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FslabError(f"{path}: cannot read the job: {exc}") from None
    try:
        return Job.from_json(data)
    except (ValueError, KeyError, TypeError) as exc:
        raise FslabError(f"{path}: not a valid fslab job: {exc}") from None


def write_job(job: Job, path: Path) -> None:
    path.write_text(json.dumps(job.to_json(), indent=1, default=str) + "\n")


def run_job(job: Job, folder: JobFolder, work_dir: Path,
            on_record: Callable[[RunRecord], None] | None = None) -> None:
    """Execute ``job``; each record is appended to the folder's records and then handed
    to ``on_record`` as read back from its JSON line (what another process sees)."""
    from .execute import execute_job

    folder.make()
    work_dir.mkdir(parents=True, exist_ok=True)

    def emit(record: RunRecord) -> None:
        line = folder.append(record)
        if on_record is not None:
            on_record(RunRecord.from_line(line))

    try:
        try:
            execute_job(job, folder, work_dir, emit)
        except OSError as exc:  # the job folder's disk is full or read-only: so is the next run's
            if exc.errno not in STUDY_LEVEL_ERRNOS:
                raise
            raise ResultsUnwritable(f"cannot write the job's records or artifacts in {folder.path}: "
                                    f"{exc.strerror or exc}") from exc
    except FslabError as exc:
        with contextlib.suppress(OSError):  # on a full disk error.json may not fit either
            folder.write_error(exc, exc.scope)
        raise


def age_job(job: Job, folder: JobFolder, work_dir: Path) -> AgingReport:
    """Make the job's file system on its device, age it, trim it and unmount: the device
    is then the aged image (`fslab job age`, run in a guest whose disk the host keeps as
    the image every repetition copies). The report goes to the folder's aging.json; an
    error's message to aging-error.txt, so the host can say why."""
    import os

    from ..aging import age
    from ..aging_option import AgingOption
    from ..commands import run_command
    from ..devices import DEVICES
    from ..filesystems import FILESYSTEMS, mkfs, mounted
    from ..kernel_log import IMAGE_NOT_KEPT, DiskErrorWatch

    cell = job.cell
    folder.make()
    work_dir.mkdir(parents=True, exist_ok=True)
    try:
        if cell.aging is None:
            raise FslabError(f"job {job.id}: its file system has no aging option: nothing to age")
        fstype = FILESYSTEMS.get(cell.fs_type)
        kind = DEVICES.get(job.settings.device["kind"])
        section = kind.from_job(job.settings.device)
        tag = f"{os.getpid()}-{os.urandom(4).hex()}"
        # The watch starts once the device is attached: earlier lines name its name's last holder.
        with kind.provision(section, work_dir, tag, job.grant) as device, DiskErrorWatch() as watch:
            mkfs(fstype, device, list(cell.mkfs))
            mountpoint = work_dir / f"mnt-aging-{tag}"
            with mounted(fstype, device, list(cell.mount), mountpoint):
                report = age(mountpoint, AgingOption.model_validate(cell.aging))
                run_command(["fstrim", str(mountpoint)], timeout=600, check=False)
            # An image aged on a disk that refused writes would be every repetition's start.
            watch.refuse(device.kernel_names(), "while it was aged", IMAGE_NOT_KEPT)
    except FslabError as exc:
        (folder.path / AGING_ERROR).write_text(f"{exc}\n")
        raise
    (folder.path / AGING_RESULT).write_text(json.dumps({**report.as_dict(), "file_set": report.file_set}))
    return report
