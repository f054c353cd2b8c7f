"""Executors: how a study's jobs are dispatched. ``local`` (the default) runs them one
after another on this machine through each job's backend; ``tls://HOST:PORT`` (with the
lab's certificates, fslab.executors.lab) sends each job to a Dask distributed cluster of
fslab workers (``fslab worker``); plaintext ``tcp://``/``dask://`` only with ``--insecure``. An executor
only hands records back: the runner alone writes the store.

Contract of an executor: ``run(jobs, jobs_dir, work_dir, on_record)`` executes every job,
writing each job's records and artifacts in its job folder ``jobs_dir/<job id>/``
(fslab.job.folder) and calling ``on_record(record, that folder)`` for each record as it
becomes available; ``on_progress(record, that folder)``, when given, for a run that ended
where its record is stored only when its job ends (a guest): to show it, not to store it
(the Dask executor does not call it: a worker's folder is read when its job ends). It
raises FslabError for what stops the study.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..errors import SpecError
from ..job.folder import JobFolder

if TYPE_CHECKING:
    from ..jobdata.model import Job
    from ..jobdata.record import RunRecord


class Executor(Protocol):
    # whether consecutive guest jobs share one boot (the time estimate counts boots by it)
    keeps_guests_booted: bool

    def run(self, jobs: list[Job], jobs_dir: Path, work_dir: Path,
            on_record: Callable[[RunRecord, JobFolder], None],
            on_progress: Callable[[RunRecord, JobFolder], None] | None = None) -> None: ...


class LocalExecutor:
    """Jobs in plan order on this machine, each through its backend."""

    keeps_guests_booted = True

    def run(self, jobs: list[Job], jobs_dir: Path, work_dir: Path,
            on_record: Callable[[RunRecord, JobFolder], None],
            on_progress: Callable[[RunRecord, JobFolder], None] | None = None) -> None:
        from ..backends import BACKENDS

        # A backend that can keep what consecutive jobs share (a booted guest) keeps it
        # while its jobs follow one another, and lets it go when a job of another backend
        # comes (a host job measured beside an idle guest would share the machine with it),
        # when the batch ends or is interrupted.
        for name, consecutive in itertools.groupby(jobs, key=lambda job: job.backend):
            keep_booted = getattr(BACKENDS.get(name), "keep_booted", None)
            with keep_booted() if keep_booted is not None else contextlib.nullcontext():
                for job in consecutive:
                    folder = JobFolder(jobs_dir / job.id)
                    shutil.rmtree(folder.path, ignore_errors=True)
                    progress = functools.partial(_with_folder, on_progress, folder) if on_progress else None
                    BACKENDS.get(job.backend).execute(job, folder, work_dir,
                                                      functools.partial(_with_folder, on_record, folder), progress)
                    shutil.rmtree(folder.path, ignore_errors=True)


def _with_folder(on_record: Callable[[RunRecord, JobFolder], None], folder: JobFolder, record: RunRecord) -> None:
    on_record(record, folder)


def open_executor(url: str | None, tls: Path | None = None, insecure: bool = False) -> Executor:
    """``None``/``local``, or a Dask scheduler: ``tls://HOST:PORT`` with ``tls`` (the lab
    directory of ``fslab lab init``), or plaintext ``tcp://``/``dask://HOST:PORT`` only with
    ``insecure``; anything else is a SpecError saying what is accepted."""
    if url in (None, "", "local"):
        if tls is not None or insecure:
            raise SpecError("--tls and --insecure are for a Dask scheduler: add --executor tls://HOST:PORT")
        return LocalExecutor()
    if url.startswith(DASK_SCHEMES):
        from .dask import DaskExecutor

        return DaskExecutor.from_url(url, tls, insecure)
    raise SpecError(f"--executor {url!r}: not an executor; use `local` (the default) or "
                    "`tls://HOST:PORT --tls DIR` (a Dask scheduler with fslab workers; "
                    "plaintext tcp://HOST:PORT only with --insecure)")


DASK_SCHEMES = ("tls://", "tcp://", "dask://")
