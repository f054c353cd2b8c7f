"""The worker side of the Dask executor: the task that runs one job on a worker machine,
and `fslab worker`, which starts a Dask worker with the resources that task needs.

A task runs the job as a local run does, through its backend (the job entry ``fslab job
run`` on this kernel, or in a QEMU guest), in a process of its own in a scratch folder,
and returns the records (the JSON lines of ``records.jsonl``) and the artifacts (a gzip'd
tar of ``runs/``) as bytes. A job's artifacts above ``ARTIFACT_LIMIT_BYTES`` stay on the
worker (their place is returned instead): a result travels through the worker's and the
driver's memory, and traces of long runs can be gigabytes.

One job per machine: the task holds an exclusive flock on the machine's lock file while
its job runs, so two jobs never measure at once on one machine even when the scheduler
sends two (a mis-started worker with more threads, or two workers on one machine).
Before each job it releases what a killed job left (state files of dead processes whose
resources lie in the worker's scratch folder: fslab.cleanup).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import io
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..datarecords import asdict
from ..errors import FslabError
from ..job.folder import JobFolder
from ..signals import stop_job_process

if TYPE_CHECKING:
    from .lab import Access

SCRATCH_ENV = "FSLAB_WORKER_SCRATCH"  # where jobs run (images, mounts, out dirs)
LOCK_ENV = "FSLAB_WORKER_LOCK"  # the per-machine lock file
DEFAULT_SCRATCH = Path("/var/tmp/fslab-worker")
DEFAULT_LOCK = Path("/run/fslab/worker.lock")
ARTIFACT_LIMIT_BYTES = 256 << 20
HEARTBEAT_S = 5.0  # a running job's "alive" events to the driver
EVENT_TOPIC_PREFIX = "fslab-"  # + the study invocation's token: "job started" events
ALIVE_SUFFIX = "-alive"  # the topic of running jobs' beats
_PR_SET_PDEATHSIG = 1


def worker_identity() -> dict[str, Any]:
    """Who runs the task: the Dask worker's address and name, and the machine's name."""
    from distributed import get_worker

    worker = get_worker()
    return {"address": worker.address, "name": str(worker.name), "hostname": platform.node()}


def run_job_task(job_json: dict[str, Any], deadline_s: float, topic: str) -> dict[str, Any]:
    """The Dask task: run one job (its JSON) on this worker; return what the driver stores.

    Refuses to run a job that already started elsewhere (its worker was lost and the
    scheduler re-sent it): retries are off, the driver records the loss instead."""
    from distributed import get_client, get_worker

    worker = get_worker()
    me = worker_identity()
    job_id = str(job_json["id"])
    for _, event in get_client().get_events(topic):
        if event.get("job") == job_id and event.get("state") == "started":
            raise FslabError(f"not run again: job {job_id} started on worker {event['address']} "
                             f"({event['hostname']}), which was lost; retries are off "
                             "(--retry-failed runs it again)")
    key = worker.get_current_task()
    scratch = Path(os.environ.get(SCRATCH_ENV) or DEFAULT_SCRATCH)
    lock_path = Path(os.environ.get(LOCK_ENV) or DEFAULT_LOCK)
    with machine_lock(lock_path, deadline_s):
        started = time.time()
        worker.log_event(topic, {"job": job_id, "state": "started", "at": started, **me})
        cleaned = clear_leftovers(scratch)
        folder = JobFolder(scratch / "jobs" / f"{job_id}-{uuid.uuid4().hex[:8]}").make()
        kept_at = None
        try:
            beats = iter(range(1, 1 << 62))

            def alive() -> bool:
                """Between polls: say the job is alive (the driver's lost-worker check
                needs no scheduler timeout) and whether the driver still wants it."""
                worker.log_event(topic + ALIVE_SUFFIX, {"job": job_id, "beat": next(beats)})
                return not _cancelled(worker, key)

            returncode, why_stopped = _run_entry(job_json, folder, scratch / "work", deadline_s, alive)
            finished = time.time()
            records = folder.record_lines()
            study_error = folder.error()
            error = None if study_error is None else asdict(study_error)
            stderr = folder.stderr_file.read_text(errors="replace")[-4000:]
            artifacts, kept_at = _pack_artifacts(folder)
        finally:
            if kept_at is None:
                shutil.rmtree(folder.path, ignore_errors=True)
    return {
        "records": records, "artifacts": artifacts, "artifacts_kept_at": kept_at,
        "error": error, "returncode": returncode, "stopped": why_stopped, "stderr_tail": stderr,
        "worker": {**me, "job_started_at": started, "job_finished_at": finished,
                   "leftovers_released": cleaned},
    }


@contextlib.contextmanager
def machine_lock(path: Path, wait_s: float) -> Iterator[None]:
    """Hold this machine's job lock (flock, dropped by the kernel if we die)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        give_up = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > give_up:
                    raise FslabError(f"another job held this machine's lock {path} for over "
                                     f"{wait_s:.0f} s: one job per machine") from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def clear_leftovers(scratch: Path) -> list[str]:
    """Release what a killed job left in this worker's scratch folder (fslab.cleanup of
    dead processes' state files); what was released is returned for provenance."""
    from ..cleanup import cleanup

    if not scratch.exists():
        return []
    return cleanup(under=scratch)


def _cancelled(worker: Any, key: Any) -> bool:
    """The driver cancelled this task (Ctrl-C, a lost study): stop the job."""
    state = worker.state.tasks.get(key)
    return state is None or state.state in ("cancelled", "released", "forgotten")


def _die_with_parent() -> None:
    """In the job process: SIGTERM when the worker dies (a SIGKILLed worker must not
    leave a job measuring, holding mounts and loop devices)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _run_entry(job_json: dict[str, Any], folder: JobFolder, work_dir: Path, deadline_s: float,
               alive: Callable[[], bool]) -> tuple[int, str | None]:
    """The job in its own process (job_process); (exit status, why it was stopped or None)."""
    folder.job_file.write_text(json.dumps(job_json))
    # Through the job's backend: a host job is `fslab job run` in that process, a guest
    # job boots its guest there.
    argv = [sys.executable, "-m", "fslab.executors.job_process", str(folder.job_file), str(folder.path),
            str(work_dir)]
    with open(folder.stderr_file, "w") as stderr:
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr,
                                 start_new_session=True, preexec_fn=_die_with_parent)
        give_up = time.monotonic() + deadline_s
        next_beat = 0.0
        why = None
        while child.poll() is None:
            if time.monotonic() > give_up:
                why = f"passed its deadline of {deadline_s:.0f} s"
            elif time.monotonic() >= next_beat:
                next_beat = time.monotonic() + HEARTBEAT_S
                if not alive():
                    why = "cancelled by the driver"
            if why:
                stop_job_process(child)
                break
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(0.2)  # returns as soon as the job ends
    return child.returncode, why


def _pack_artifacts(folder: JobFolder) -> tuple[bytes | None, str | None]:
    """(tar.gz of runs/, None), or (None, where they stay) when they are too large."""
    runs = folder.runs_dir
    if not runs.is_dir():
        return None, None
    size = sum(p.stat().st_size for p in runs.rglob("*") if p.is_file())
    if size > ARTIFACT_LIMIT_BYTES:
        return None, f"{platform.node()}:{runs}"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(runs, arcname=runs.name)
    return buffer.getvalue(), None


def worker_resources(machine_class: str | None) -> dict[str, float]:
    resources = {"bench": 1.0}
    if machine_class:
        resources[f"class_{machine_class}"] = 1.0
    return resources


def serve(access: Access, machine_class: str | None, *, name: str | None, host: str | None,
          scratch: Path, lock: Path) -> None:
    """Run a Dask worker until it is stopped: one thread, resources ``bench=1`` (plus
    ``class_<name>=1``), jobs in ``scratch``, one job at a time on this machine (``lock``).
    Over TLS (``access.lab``) it listens and connects with the lab's worker certificate
    only, after one handshake that says plainly when the scheduler or this worker is not
    of the lab (Dask itself would retry without end)."""
    import asyncio

    import dask
    from distributed import Worker

    from .closed_http import without_http
    from .lab import probe

    probe(access)

    os.environ[SCRATCH_ENV] = str(scratch)
    os.environ[LOCK_ENV] = str(lock)
    scratch.mkdir(parents=True, exist_ok=True)
    clear_leftovers(scratch)

    # Dask's worker samples its threads' stacks every 10 ms for its dashboard's profile: CPU
    # taken from the runs measured on this machine (an idle worker here: 3.2 s of CPU in 30 s
    # for two workers with it, 2.0 s without), for a profile of a thread that only waits on a
    # job's process.
    dask.config.set({"distributed.worker.profile.enabled": False})

    async def main() -> None:
        # No HTTP server: Dask's would listen on every address with no login (closed_http).
        async with without_http(Worker)(access.address, nthreads=1, resources=worker_resources(machine_class),
                          name=name, host=host, local_directory=str(scratch / "dask"),
                          security=access.security()) as worker:
            await worker.finished()

    asyncio.run(main())
