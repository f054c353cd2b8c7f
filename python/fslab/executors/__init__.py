"""Executors: how a study's jobs are dispatched. ``local`` (the default) runs them one
after another on this machine through each job's backend; ``dask://HOST:PORT`` sends
each job to a Dask distributed cluster of fslab workers (``fslab worker``). An executor
only hands records back: the runner alone writes the store.

Contract of an executor: ``run(jobs, jobs_dir, work_dir, on_record)`` executes every job,
writing each job's records and artifacts under ``jobs_dir/<job id>/`` (the job's --out
directory, as ``fslab job run`` lays it out) and calling ``on_record(record, that dir)``
for each record as it becomes available. It raises FslabError for what stops the study.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..errors import SpecError

if TYPE_CHECKING:
    from ..plan import Job
    from ..records import RunRecord

class Executor(Protocol):
    def run(self, jobs: list[Job], jobs_dir: Path, work_dir: Path,
            on_record: Callable[[RunRecord, Path], None]) -> None: ...


class LocalExecutor:
    """Jobs in plan order on this machine, each through its backend."""

    def run(self, jobs: list[Job], jobs_dir: Path, work_dir: Path,
            on_record: Callable[[RunRecord, Path], None]) -> None:
        from ..backends import BACKENDS

        for job in jobs:
            out_dir = jobs_dir / job.id
            shutil.rmtree(out_dir, ignore_errors=True)
            BACKENDS.get(job.backend).execute(job, out_dir, work_dir,
                                              lambda record, d=out_dir: on_record(record, d))
            shutil.rmtree(out_dir, ignore_errors=True)


def open_executor(url: str | None) -> Executor:
    """``None``/``local`` or ``dask://HOST:PORT``; anything else is a SpecError saying
    what is accepted."""
    if url in (None, "", "local"):
        return LocalExecutor()
    if url.startswith("dask://"):
        from .dask import DaskExecutor

        return DaskExecutor.from_url(url)
    raise SpecError(f"--executor {url!r}: not an executor; use `local` (the default) or "
                    "`dask://HOST:PORT` (a Dask scheduler with fslab workers)")
