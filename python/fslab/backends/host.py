"""The host backend: jobs run on this machine's kernel, through the job entry.

By default a job runs in this process (no interpreter start per job: the per-run
overhead stays low), but still through the JSON seam: the job is written as JSON, read
back, and its records come back as the JSON lines the job entry wrote. With
``FSLAB_JOB_PROCESS=1`` (or ``HostBackend(isolate=True)``) each job runs as
``python -m fslab job run JOB.json --out DIR`` in a process of its own, exactly as a
guest or a remote worker runs it; Ctrl-C and SIGTERM are forwarded to it and the
records it finished are kept.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import FslabError
from ..signals import shielded, stop_job_process
from . import BACKENDS

if TYPE_CHECKING:
    from ..devices import DeviceKind
    from ..filesystems import FilesystemType
    from ..job.folder import JobFolder
    from ..jobdata.model import Job
    from ..jobdata.record import RunRecord


class HostBackend:
    name = "host"

    def __init__(self, isolate: bool | None = None):
        self._isolate = isolate

    @property
    def isolate(self) -> bool:
        if self._isolate is not None:
            return self._isolate
        return os.environ.get("FSLAB_JOB_PROCESS", "") not in ("", "0")

    def unavailable(self) -> str | None:
        return None

    def supports(self, fs: FilesystemType, device: DeviceKind, section: Any) -> str | None:
        if not fs.on_host:
            return f"this host kernel cannot mount {fs.name}"
        if device.needs_guest:
            if device.host_probe is None:
                return f"{device.name} devices are made inside a guest (this host kernel lacks them)"
            probe = device.host_probe(section)  # md: this kernel may have it after all
            if not probe.available:
                return probe.finding
        return None

    def execute(self, job: Job, folder: JobFolder, work_dir: Path,
                on_record: Callable[[RunRecord], None],
                on_progress: Callable[[RunRecord], None] | None = None) -> None:
        # on_progress is not needed: each record reaches on_record as its run ends.
        from ..job.entry import load_job, run_job, write_job

        folder.make()
        write_job(job, folder.job_file)
        if self.isolate:
            _execute_in_process(folder, work_dir, on_record)
        else:
            run_job(load_job(folder.job_file), folder, work_dir, on_record)


def _execute_in_process(folder: JobFolder, work_dir: Path, on_record: Callable[[RunRecord], None]) -> None:
    """Run the job entry as a child process; hand on each record as its line appears."""
    argv = [sys.executable, "-m", "fslab", "job", "run", str(folder.job_file), "--out", str(folder.path),
            "--work", str(work_dir)]
    delivered = 0
    with open(folder.stderr_file, "w") as stderr:
        # Its own session: a signal reaches it only through us, once, after which we wait
        # for its teardown (the terminal's Ctrl-C would otherwise reach both at once).
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr,
                                 start_new_session=True)
        try:
            while child.poll() is None:
                delivered = _deliver(folder, delivered, on_record)
                time.sleep(0.1)
        except BaseException:
            with shielded():  # a second Ctrl-C must not abandon the child's teardown
                stop_job_process(child)
            _deliver(folder, delivered, on_record)
            raise
    delivered = _deliver(folder, delivered, on_record)
    if child.returncode != 0:
        error = folder.error()
        if error is not None:
            raise FslabError(error.message)
        tail = folder.stderr_file.read_text(errors="replace").strip().splitlines()[-10:]
        raise FslabError(f"the job process `{' '.join(argv)}` exited with status {child.returncode}"
                         + ("\n  " + "\n  ".join(tail) if tail else ""))


def _deliver(folder: JobFolder, delivered: int, on_record: Callable[[RunRecord], None]) -> int:
    for record in folder.records(skip=delivered):
        on_record(record)
        delivered += 1
    return delivered


BACKENDS.register("host", HostBackend())
