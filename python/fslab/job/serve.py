"""``python -m fslab.job serve DIR``: one process in a guest that imports the job entry
once and runs each job the host hands it in a forked child.

Under TCG the job entry's import costs seconds, as much as a boot; a guest that runs
consecutive jobs of a study (fslab.backends.guest.session) pays it once this way. A child
is a fresh process for its job as far as the job can tell (its own signal handlers,
cgroups, files and exit status); it shares with the server only the modules imported.

The protocol, in DIR (a folder the host shares with the guest):
    req-N.json    {"argv": [...] for `python -m fslab.job`, "disks": ["/dev/vda", ...],
                  "known": the host's tool facts for the job (``tool_facts``), or none},
                  written by the host under another name and renamed into place
    out-N, err-N  the child's stdout and stderr
    status-N      its exit status (renamed into place: never read half written)
    stop          the server exits
Before it forks the child of a job, the server computes what every job of that kind would
compute alike, so each child inherits it instead of paying for it (4-10 s a job under
TCG): the modules of its device kind and workload (loaded on first use), the version of
its file system's and workload's tools, and the files of the workload's executables.

``disks`` are the guest's virtio disks: before and after its job the child writes back
and drops the guest's cache of each (BLKFLSBUF), because between jobs the host hands
over fresh disks by punching out the image files, which a cached page would hide.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..jobdata.model import Job

BLKFLSBUF = 0x1261  # <linux/fs.h>: write back, then drop a block device's cached pages
# Looks for the next request: every 20 ms for a second after a job (the host hands the
# next one over at once), then every 250 ms. Under TCG a look is an emulated stat over 9p:
# looking every 20 ms kept an idle server at 0.25 of a host core.
POLL_S = 0.02
POLL_IDLE_S = 0.25
QUICK_LOOKS_S = 1.0


def drop_disk_caches(disks: list[str]) -> None:
    """Write back and drop the guest's cached pages of each disk (nothing may be mounted)."""
    for disk in disks:
        fd = os.open(disk, os.O_RDONLY)
        try:
            fcntl.ioctl(fd, BLKFLSBUF, 0)
        finally:
            os.close(fd)


def _child(folder: Path, n: int, request: dict[str, list[str]], main: Callable[[list[str]], int]) -> int:
    """In the forked child: the job, between two drops of its disks' caches."""
    # The server runs in the background of a shell, which starts it with SIGINT and SIGQUIT
    # ignored; a job its guest's agent starts ignores neither, nor do the tools it runs.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)
    for fd, name in ((1, f"out-{n}"), (2, f"err-{n}")):
        target = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    disks = list(request.get("disks", []))
    try:
        drop_disk_caches(disks)
        status = main(list(request["argv"]))
        drop_disk_caches(disks)
    except BaseException as exc:  # the server must hear of it as a status, whatever it was
        traceback.print_exc()
        status = 130 if isinstance(exc, KeyboardInterrupt) else 2
    sys.stdout.flush()
    sys.stderr.flush()
    return status


def warm_job(job: Job) -> None:
    """Compute, in this process, what the child running ``job`` would compute alike in
    every job: its device kind's and workloads' modules, the versions of its file system's
    and workloads' tools and the files of the workloads' executables (all cached per
    process). Side effects: none but caches (and a tool's --version)."""
    from ..devices import DEVICES
    from ..provenance import fs_tool_version
    from ..toolpages import tool_files
    from ..workloads import WORKLOADS

    DEVICES.get(job.settings.device["kind"]).from_job(job.settings.device)  # its module, loaded
    fs_tool_version(job.cell.fs_type)
    for kind in dict.fromkeys(run.cell.workload_kind for run in job.runs):
        workload = WORKLOADS.get(kind)
        workload.tool_versions()
        for tool in workload.tools:
            tool_files(tool)


def tool_facts(job: Job) -> dict[str, list[dict[str, Any]]]:
    """What ``warm_job`` works out for ``job``, worked out in this process and said as
    data, for the job's request: the guest sees this host's root, so its tools are these
    very files, and a start of fio there costs 1-2 s under TCG (its 64 libraries linked
    emulated) and the search for its files another 1.5 s of stat over 9p, against
    milliseconds here. The server takes each fact only for a file it finds the same."""
    from ..commands import versions_known
    from ..toolpages import files_known

    try:
        warm_job(job)
    except Exception:  # noqa: BLE001 - the guest's server meets it again, and its child says what it is
        pass
    return {"versions": versions_known(), "files": files_known()}


def preload(job: Job) -> None:
    """Import here, once, the modules the job's runs load on their way (each child would
    import them again): for a traced run numpy, the trace reader and analysis and pyarrow's
    Parquet writer, with the device models where it is replayed; for an aged file system
    the aging option's pydantic model with its validator built, and the layout and
    free-space facts. Under TCG: about 6 s for numpy, 7 s for pyarrow, 3-6 s for pydantic
    (a 1-vCPU guest, host busy), per job."""
    if job.settings.trace:
        from .tracing import load_trace_modules

        load_trace_modules(replayed=bool(job.settings.simulate))
    if job.cell.aging is not None:
        from .. import aged_images, fragmentation  # noqa: F401
        from ..aging_option import AgingOption

        AgingOption.model_validate(job.cell.aging)


def warm(argv: list[str], known: dict[str, Any] | None = None) -> None:
    """Compute here, once, what the child running ``argv`` (`run JOB ...`) would compute
    in every job alike (``warm_job``, ``preload``), starting from the facts the host handed
    over (``tool_facts``). Whatever fails is left for the child to meet and report."""
    from ..commands import take_versions
    from ..toolpages import take_files
    from .entry import load_job

    try:
        if known:
            take_versions(known.get("versions", []))
            take_files(known.get("files", []))
        job = load_job(Path(argv[1]))
        warm_job(job)
        preload(job)
    except Exception:  # noqa: BLE001 - the child meets it again and says what it is
        pass


def _write_status(folder: Path, n: int, status: int) -> None:
    tmp = folder / f".status-{n}"
    tmp.write_text(f"{status}\n")
    tmp.rename(folder / f"status-{n}")


def _status_of(wait_status: int) -> int:
    """The exit status as a shell says it: 128+N for a child killed by signal N."""
    code = os.waitstatus_to_exitcode(wait_status)
    return 128 - code if code < 0 else code


def serve(folder: Path, main: Callable[[list[str]], int]) -> int:
    """Run requests in order until ``stop`` appears, each as ``main(argv)`` (the job
    entry's) in a child; 0 then."""
    # Imported once, here, for every child: the job entry and what a run always needs.
    from . import entry, execute  # noqa: F401

    n = 0
    last_job = time.monotonic()
    while True:
        request_file = folder / f"req-{n}.json"
        if not request_file.exists():
            if (folder / "stop").exists():
                return 0
            time.sleep(POLL_S if time.monotonic() - last_job < QUICK_LOOKS_S else POLL_IDLE_S)
            continue
        request = json.loads(request_file.read_text())
        if request["argv"][:1] == ["run"]:
            warm(list(request["argv"]), request.get("known"))
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 2
            try:
                code = _child(folder, n, request, main)
            finally:
                os._exit(code)
        _, wait_status = os.waitpid(pid, 0)
        _write_status(folder, n, _status_of(wait_status))
        n += 1
        last_job = time.monotonic()
