"""Executors: how a study's jobs are dispatched. ``local`` (the default) runs them one
after another on this machine through each job's backend; ``dask://HOST:PORT`` sends
each job to a Dask distributed cluster of fslab workers (``fslab worker``). An executor
only hands records back: the runner alone writes the store.

Contract of an executor: ``run(jobs, jobs_dir, work_dir, on_record)`` executes every job,
writing each job's records and artifacts in its job folder ``jobs_dir/<job id>/``
(fslab.job.folder) and calling ``on_record(record, that folder)`` for each record as it
becomes available. It raises FslabError for what stops the study.
"""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..errors import SpecError
from ..job.folder import JobFolder

if TYPE_CHECKING:
    from ..job.model import Job
    from ..job.record import RunRecord


class Executor(Protocol):
    def run(self, jobs: list[Job], jobs_dir: Path, work_dir: Path,
            on_record: Callable[[RunRecord, JobFolder], None]) -> None: ...


class LocalExecutor:
    """Jobs in plan order on this machine, each through its backend."""

    def run(self, jobs: list[Job], jobs_dir: Path, work_dir: Path,
            on_record: Callable[[RunRecord, JobFolder], None]) -> None:
        from ..backends import BACKENDS

        for job in jobs:
            folder = JobFolder(jobs_dir / job.id)
            shutil.rmtree(folder.path, ignore_errors=True)
            BACKENDS.get(job.backend).execute(job, folder, work_dir, functools.partial(_with_folder, on_record, folder))
            shutil.rmtree(folder.path, ignore_errors=True)


def _with_folder(on_record: Callable[[RunRecord, JobFolder], None], folder: JobFolder, record: RunRecord) -> None:
    on_record(record, folder)


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
