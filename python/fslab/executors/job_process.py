"""`python -m fslab.executors.job_process JOB.json OUT WORK`: one job through its own
backend, in a process of its own on a Dask worker. A host job runs the job entry in this
process (as `fslab job run`); a guest job boots its QEMU guest, which runs the job entry.
Either way the records and artifacts land in the job folder OUT (fslab.job.folder).
Exit status 0, 2 for an error (its message on stderr), 130 when stopped by a signal."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    from ..backends import BACKENDS
    from ..errors import FslabError
    from ..job.entry import load_job
    from ..job.folder import JobFolder
    from ..signals import install_handlers

    os.environ.pop("FSLAB_JOB_PROCESS", None)  # already a process of its own
    install_handlers()  # SIGTERM (the worker's stop, or its death) unwinds and releases
    try:
        job = load_job(Path(argv[0]))
        BACKENDS.get(job.backend).execute(job, JobFolder(Path(argv[1])), Path(argv[2]), lambda record: None)
    except FslabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
