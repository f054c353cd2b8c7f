"""The Dask executor (driver side): ``fslab run STUDY --executor tls://HOST:PORT --tls DIR``
(mutual TLS with the lab's certificates, fslab.executors.lab), or a plaintext
``tcp://``/``dask://HOST:PORT`` scheduler with ``--insecure``.

Each job becomes one task needing the resources ``bench=1`` (one job per worker machine at
a time) and, when the study names a machine class, ``class_<name>=1``. The task
(fslab.executors.dask_worker) runs the job through its backend on the worker, as a local
run would, and returns records and artifacts; this side unpacks them into the job's out
directory and hands them to the runner, which alone writes the store.

Failure is visible, never a hang and never a silent retry:
- a class no worker offers stops the study before anything is submitted;
- a task is never retried: a job whose worker was lost is stored as failed runs naming
  the worker's host and the reason (``--retry-failed`` runs them again);
- each job has a deadline (the sum of its runs' timeouts plus setup time), enforced on
  the worker and, as a safety net, here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import logging
import shlex
import tarfile
import time
import uuid
from collections.abc import Callable
from concurrent.futures import CancelledError
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from ..datarecords import replace
from ..errors import STUDY_LEVEL_ERRNOS, ExecutorLost, FslabError, MissingCapability, SpecError
from ..job.folder import JobFolder, fail_unfinished
from ..jobdata.record import RunRecord
from ..units import counted
from .dask_worker import ALIVE_SUFFIX, EVENT_TOPIC_PREFIX
from .lab import Access, probe, scheduler_access

if TYPE_CHECKING:
    from ..jobdata.model import Job

DEFAULT_RUN_DEADLINE_S = 3600.0  # a run without a workload timeout
SETUP_ALLOWANCE_S = 600.0  # mkfs, mount, aging, teardown of one job
DRIVER_GRACE_S = 180.0  # past the deadline before the driver gives up on the worker
# A running job's worker says so every few seconds (dask_worker.HEARTBEAT_S); silence this
# long means it is gone (killed, or its network is), whatever the scheduler's own timeout.
SILENCE_S = 40.0
CONNECT_TIMEOUT_S = 10.0
POLL_S = 1.0
WORKERS_CHECK_S = 5.0  # how often the driver asks whether any worker is connected, while none runs a job


def job_deadline_s(job: Job, override: float | None = None) -> float:
    """Seconds a job may take on its worker: ``override``, else its runs' timeouts
    (an hour for a run without one) plus a setup allowance."""
    if override is not None:
        return override
    return SETUP_ALLOWANCE_S + sum(r.cell.timeout_s or DEFAULT_RUN_DEADLINE_S for r in job.runs)


def required_resources(job: Job) -> dict[str, float]:
    resources = {"bench": 1.0}
    if job.settings.machine_class:
        resources[f"class_{job.settings.machine_class}"] = 1.0
    return resources


def check_placement(workers: dict[str, dict[str, Any]], jobs: list[Job], address: str,
                    access_flags: str = "--tls DIR") -> None:
    """Every job can be placed on some worker, or an error naming the class and the
    classes the workers offer (asked before anything is submitted)."""
    offered: dict[str, int] = {}
    benches = 0
    for info in workers.values():
        resources = info.get("resources") or {}
        if resources.get("bench", 0) < 1:
            continue
        benches += 1
        for name in resources:
            if name.startswith("class_"):
                offered[name.removeprefix("class_")] = offered.get(name.removeprefix("class_"), 0) + 1
    if benches == 0:
        raise FslabError(f"the Dask scheduler at {address} has no fslab worker (none offers the "
                         f"resource bench=1; {counted(len(workers), 'worker')} without it): start one with "
                         f"`fslab worker {shlex.quote(address)} {access_flags}`")
    for job in jobs:
        wanted = job.settings.machine_class
        if wanted and wanted not in offered:
            classes = ", ".join(f"{c} ({n} worker{'s' * (n != 1)})" for c, n in sorted(offered.items()))
            raise FslabError(
                f"machine_class {wanted!r}: no worker of the scheduler at {address} offers it "
                f"(classes offered: {classes or 'none'}); start one with "
                f"`fslab worker {shlex.quote(address)} {access_flags} --class {shlex.quote(wanted)}` "
                "or change the study's machine_class")


@dataclasses.dataclass
class _Pending:
    job: Job
    future: Any
    submitted: float
    deadline_s: float
    started: dict[str, Any] | None = None  # the worker's "started" event
    noticed: float = 0.0  # when the driver saw it start (its own clock)
    last_heard: float = 0.0  # when the driver last saw a new beat of it
    beat: int = 0


class DaskExecutor:
    keeps_guests_booted = False  # a worker runs each job in a process, and so a guest, of its own

    def __init__(self, access: Access, deadline_s: float | None = None):
        self.access = access
        self.address = access.address
        self.deadline_s = deadline_s
        # Told while jobs wait with no worker connected (a text saying since when), and
        # None once one is back: a driver must not show a stale "about 25 s left" then.
        self.on_waiting: Callable[[str | None], None] | None = None
        self._alone_since: float | None = None

    @staticmethod
    def from_url(url: str, tls: Path | None = None, insecure: bool = False) -> DaskExecutor:
        """``tls://HOST:PORT[?deadline=SECONDS]`` with ``tls`` (the lab directory of
        ``fslab lab init``), or a plaintext ``tcp://`` / ``dask://HOST:PORT[?...]`` with
        ``insecure`` (fslab.executors.lab.scheduler_access)."""
        base, _, query_text = url.partition("?")
        query = parse_qs(query_text)
        deadline = None
        if "deadline" in query:
            try:
                deadline = float(query["deadline"][0])
            except ValueError:
                raise SpecError(f"--executor {url!r}: deadline must be seconds (a number)") from None
        if "://" not in base:
            raise SpecError(f"--executor {url!r}: give the scheduler as tls://HOST:PORT (with --tls DIR)")
        try:  # before the study is planned or stored
            import distributed  # noqa: F401
        except ImportError:
            raise MissingCapability("the Dask executor needs the `distributed` package",
                                    fix="pip install 'fslab[dask]'") from None
        return DaskExecutor(scheduler_access("--executor", base, "driver", tls, insecure), deadline)

    def run(self, jobs: list[Job], jobs_dir: Path, work_dir: Path,
            on_record: Callable[[RunRecord, JobFolder], None],
            on_progress: Callable[[RunRecord, JobFolder], None] | None = None) -> None:
        # on_progress is not called: a job's records come back from its worker when it ends.
        if not jobs:
            return
        from distributed import Client

        probe(self.access)  # a refused certificate said plainly, not as a connect timeout
        try:
            client = Client(self.address, timeout=f"{CONNECT_TIMEOUT_S:.0f}s", set_as_default=False,
                            security=self.access.security())
        except (OSError, TimeoutError) as exc:
            raise FslabError(f"cannot reach the Dask scheduler at {self.address}: {exc}") from None
        topic = EVENT_TOPIC_PREFIX + uuid.uuid4().hex[:12]
        pending: dict[str, _Pending] = {}
        # A lost scheduler is said once, as fslab's error: not as the client's own
        # tracebacks of each reconnect attempt.
        quiet = logging.getLogger("distributed.client")
        level = quiet.level
        quiet.setLevel(logging.CRITICAL)
        try:
            self._dispatch(client, jobs, jobs_dir, topic, pending, on_record)
        except (OSError, TimeoutError, CancelledError) as exc:  # CommClosedError is an OSError
            if isinstance(exc, OSError) and exc.errno in STUDY_LEVEL_ERRNOS:
                raise  # storing a record: the results disk is full, not the scheduler gone
            if isinstance(exc, CancelledError) and client.status == "running":
                raise  # cancelled by us (Ctrl-C), not by a lost connection
            raise self._scheduler_lost(exc, pending) from None
        finally:
            if pending:  # Ctrl-C or a study-level error: stop what still runs
                with contextlib.suppress(Exception):  # the scheduler may be gone
                    client.cancel([p.future for p in pending.values()], force=True)
            with contextlib.suppress(Exception):
                client.close(timeout=5)
            quiet.setLevel(level)

    def _scheduler_lost(self, exc: BaseException, pending: dict[str, _Pending]) -> ExecutorLost:
        """The study cannot go on without its scheduler: a study-level error (what is stored
        stays; the runner marks the study interrupted) saying how to continue."""
        return ExecutorLost(
            f"lost the Dask scheduler at {self.address} mid-study ({_first_line(exc)}); "
            f"{counted(len(pending), 'job')} {'was' if len(pending) == 1 else 'were'} still out "
            "(their finished runs are run again)")

    def _dispatch(self, client: Any, jobs: list[Job], jobs_dir: Path, topic: str, pending: dict[str, _Pending],
                  on_record: Callable[[RunRecord, JobFolder], None]) -> None:
        """Submit every job, then store each one's records as it ends."""
        from .dask_worker import run_job_task

        check_placement(_workers(client), jobs, self.address, shlex.join(self.access.flags()))
        for job in jobs:
            deadline = job_deadline_s(job, self.deadline_s)
            future = client.submit(run_job_task, job.to_json(), deadline, topic,
                                   key=f"{topic}-{job.id}", resources=required_resources(job),
                                   retries=0, pure=False)
            pending[job.id] = _Pending(job, future, time.time(), deadline)
        checked = 0.0
        while pending:
            self._wait(client, pending)
            self._note_starts(client, topic, pending)
            workers: dict[str, Any] = {}
            if any(p.started for p in pending.values()) or time.monotonic() - checked > WORKERS_CHECK_S:
                workers, checked = _workers(client), time.monotonic()
                self._say_when_alone(workers, len(pending))
            for job_id, item in list(pending.items()):
                outcome = self._settle(client, item, workers)
                if outcome is None:
                    continue
                del pending[job_id]
                folder = JobFolder(jobs_dir / job_id)
                for record in outcome(folder):
                    on_record(record, folder)

    def _say_when_alone(self, workers: dict[str, Any], waiting: int) -> None:
        """Tell ``on_waiting`` that no worker that runs jobs is connected, and since when
        (the first poll that found none), or that one is back."""
        benches = [w for w in workers.values() if (w.get("resources") or {}).get("bench", 0) >= 1]
        if benches:
            if self._alone_since is not None and self.on_waiting is not None:
                self.on_waiting(None)
            self._alone_since = None
            return
        now = time.time()
        if self._alone_since is None:
            self._alone_since = now
        if self.on_waiting is not None:
            since = time.strftime("%H:%M:%S", time.localtime(self._alone_since))
            self.on_waiting(f"no worker is connected to {self.address} since {since} "
                            f"({now - self._alone_since:.0f} s); {counted(waiting, 'job')} "
                            f"{'waits' if waiting == 1 else 'wait'}: start one with "
                            f"`fslab worker {shlex.quote(self.address)} {shlex.join(self.access.flags())}`")

    @staticmethod
    def _wait(client: Any, pending: dict[str, _Pending]) -> None:
        from distributed import wait

        try:
            with client.as_current():  # `wait` asks for the current client
                wait([p.future for p in pending.values()], timeout=POLL_S, return_when="FIRST_COMPLETED")
        except TimeoutError:
            pass

    @staticmethod
    def _note_starts(client: Any, topic: str, pending: dict[str, _Pending]) -> None:
        """Read the jobs' events: "started" (on which worker) and the numbered beats of a
        running job (on a topic of their own, so the scheduler's bounded event log keeps
        the starts). A job is heard from when its newest beat is newer than before, in
        the driver's clock (the clocks of other machines do not matter)."""
        now = time.time()
        for _, event in client.get_events(topic):
            item = pending.get(event.get("job"))
            if item is not None and item.started is None and event.get("state") == "started":
                item.started = event
                item.last_heard = item.noticed = now
        for _, event in client.get_events(topic + ALIVE_SUFFIX):
            item = pending.get(event.get("job"))
            if item is not None and event.get("beat", 0) > item.beat:
                item.beat = event["beat"]
                item.last_heard = now

    def _settle(self, client: Any, item: _Pending,
                workers: dict[str, Any]) -> Callable[[JobFolder], list[RunRecord]] | None:
        """None while the job is in progress; else what stores its records."""
        future = item.future
        if future.status == "finished":
            result = future.result()
            return lambda folder: _unpack(item.job, result, folder)
        if future.status == "cancelled" and client.status != "running":
            raise OSError(f"the client's connection is {client.status}")  # the scheduler went, not the job
        if future.status in ("error", "cancelled"):
            try:
                reason = f"the task failed: {future.exception()}"
            except Exception as exc:  # cancelled futures raise instead of returning it
                reason = f"the task was cancelled: {exc!r}"
            return lambda folder: _failed(item.job, item.started, reason, folder)
        if item.started is not None:
            if item.started["address"] not in workers:
                client.cancel([future], force=True)
                reason = (f"worker {item.started['address']} ({item.started['hostname']}) was lost "
                          f"while running this job ({time.time() - item.noticed:.0f} s after it started)")
                return lambda folder: _failed(item.job, item.started, reason, folder)
            silent = time.time() - item.last_heard
            if silent > SILENCE_S:
                client.cancel([future], force=True)
                reason = (f"worker {item.started['address']} ({item.started['hostname']}) was lost while "
                          f"running this job: nothing heard from it for {silent:.0f} s (its machine or "
                          "network is down?)")
                return lambda folder: _failed(item.job, item.started, reason, folder)
            if time.time() > item.noticed + item.deadline_s + DRIVER_GRACE_S:
                client.cancel([future], force=True)
                reason = (f"no answer from worker {item.started['address']} ({item.started['hostname']}) "
                          f"{DRIVER_GRACE_S:.0f} s past the job's deadline of {item.deadline_s:.0f} s")
                return lambda folder: _failed(item.job, item.started, reason, folder)
        return None


def _first_line(exc: BaseException) -> str:
    """What went wrong in a few words (Dask's messages run to many lines)."""
    if "scheduler-connection-lost" in str(exc):
        return "the connection to it was lost and could not be made again"
    text = str(exc).strip().splitlines()
    return type(exc).__name__ + (f": {text[0]}" if text else "")


def _workers(client: Any) -> dict[str, dict[str, Any]]:
    """The scheduler's workers now, asked directly: the client's cached scheduler_info is
    refreshed in the background without its workers and may be read half-way."""
    return client.sync(client.scheduler.identity, n_workers=-1)["workers"]


def _with_worker(record: RunRecord, worker: dict[str, Any]) -> RunRecord:
    return replace(record, provenance={**record.provenance, "worker": worker})


def unpack_artifacts(data: bytes, dest: Path) -> None:
    """Unpack a worker's tar.gz of its job folder's runs/ into ``dest``: regular files and
    folders only, each inside ``dest``, with this process's owner and default modes.

    Checked here, not by tarfile's extraction filters, which came with Python 3.11.4
    (Debian 12's python3 is 3.11.2). A worker packs only files and folders, so anything
    else (a link, a device, a name with ``..`` or a leading ``/``) means the archive is not
    one fslab made: it is refused whole, before anything of it is written."""
    import shutil

    root = dest.resolve()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        members = tar.getmembers()
        for member in members:
            # An absolute name or one climbing out with .. resolves outside; nothing in the
            # fresh folder is a link, so nothing else can.
            inside = (root / member.name).resolve().is_relative_to(root)
            if not (member.isfile() or member.isdir()) or not inside:
                what = "a file" if member.isfile() else "a folder" if member.isdir() else "neither a file nor a folder"
                raise FslabError(f"a worker's artifacts hold {member.name!r} ({what}); only files and folders "
                                 f"inside its job folder are unpacked, so none of them was. A worker running "
                                 f"this fslab packs nothing else: check what runs as the lab's workers")
        for member in members:
            target = root / member.name
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            assert source is not None  # a regular file's member always has its data
            with source, open(target, "wb") as out:
                shutil.copyfileobj(source, out)


def _unpack(job: Job, result: dict[str, Any], folder: JobFolder) -> list[RunRecord]:
    """The task's result as records whose artifacts are in ``folder``. Runs without a
    record (the job process died or was stopped) become failed records saying why."""
    import shutil

    shutil.rmtree(folder.path, ignore_errors=True)
    folder.make()
    worker = dict(result["worker"])
    if result.get("artifacts_kept_at"):
        worker["artifacts_kept_at"] = result["artifacts_kept_at"]
    if result.get("artifacts"):
        unpack_artifacts(result["artifacts"], folder.path)
    folder.records_file.write_text("".join(result["records"]))
    records = [_with_worker(r, worker) for r in folder.records()]
    error = result.get("error")
    if error is not None and error.get("scope") == "study":
        # Every later job would fail alike (a missing tool, a refused device): stop.
        raise FslabError(f"on worker {worker['address']} ({worker['hostname']}): {error['message']}")
    why = (error or {}).get("message") or result.get("stopped") or (
        f"the job process exited with status {result['returncode']}: "
        + " | ".join(result.get("stderr_tail", "").strip().splitlines()[-5:]))
    started = {"address": worker["address"], "hostname": worker["hostname"],
               "name": worker["name"], "at": worker["job_started_at"]}
    return records + _failed(job, started, f"on worker {worker['address']} ({worker['hostname']}): {why}",
                             folder, done=records)


def _failed(job: Job, started: dict[str, Any] | None, reason: str, folder: JobFolder,
            done: list[RunRecord] | None = None) -> list[RunRecord]:
    """Failed records for a job's runs that have none, naming the worker's host."""
    worker = {k: started[k] for k in ("address", "name", "hostname") if k in started} if started else {}
    provenance = {"host": {"hostname": worker.get("hostname")}, "worker": worker,
                  "backend": job.backend, "job": job.id}
    return fail_unfinished(job.runs, done or [], reason, started=started["at"] if started else time.time(),
                           provenance=provenance, folder=folder)
