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
    from ..plan import Job
    from ..records import RunRecord

JOB_FILE = "job.json"


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

    def supports(self, fs: Any, device: Any) -> str | None:
        if fs.needs_guest:
            return f"this host kernel cannot mount {fs.name}"
        if device.needs_guest:
            return f"{device.name} devices are made inside a guest (this host kernel lacks them)"
        return None

    def execute(self, job: Job, out_dir: Path, work_dir: Path,
                on_record: Callable[[RunRecord], None]) -> None:
        from ..jobs import load_job, run_job, write_job

        out_dir.mkdir(parents=True, exist_ok=True)
        job_file = out_dir / JOB_FILE
        write_job(job, job_file)
        if self.isolate:
            _execute_in_process(job_file, out_dir, work_dir, on_record)
        else:
            run_job(load_job(job_file), out_dir, work_dir, on_record)


def _execute_in_process(job_file: Path, out_dir: Path, work_dir: Path,
                        on_record: Callable[[RunRecord], None]) -> None:
    """Run the job entry as a child process; hand on each record as its line appears."""
    from ..jobs import read_error
    argv = [sys.executable, "-m", "fslab", "job", "run", str(job_file), "--out", str(out_dir),
            "--work", str(work_dir)]
    stderr_path = out_dir / "job.stderr"
    delivered = 0
    with open(stderr_path, "w") as stderr:
        # Its own session: a signal reaches it only through us, once, after which we wait
        # for its teardown (the terminal's Ctrl-C would otherwise reach both at once).
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr,
                                 start_new_session=True)
        try:
            while child.poll() is None:
                delivered = _deliver(out_dir, delivered, on_record)
                time.sleep(0.1)
        except BaseException:
            with shielded():  # a second Ctrl-C must not abandon the child's teardown
                stop_job_process(child)
            _deliver(out_dir, delivered, on_record)
            raise
    delivered = _deliver(out_dir, delivered, on_record)
    if child.returncode != 0:
        error = read_error(out_dir)
        if error is not None:
            raise FslabError(error["message"])
        tail = stderr_path.read_text(errors="replace").strip().splitlines()[-10:]
        raise FslabError(f"the job process `{' '.join(argv)}` exited with status {child.returncode}"
                         + ("\n  " + "\n  ".join(tail) if tail else ""))


def _deliver(out_dir: Path, delivered: int, on_record: Callable[[RunRecord], None]) -> int:
    from ..jobs import read_records

    for record in read_records(out_dir, skip=delivered):
        on_record(record)
        delivered += 1
    return delivered




BACKENDS.register("host", HostBackend())
