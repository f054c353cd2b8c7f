"""`fslab worker SCHEDULER --tls DIR`: a Dask worker that runs a study's jobs on this machine
(fslab.executors.dask_worker), for `fslab run STUDY --executor tls://SCHEDULER --tls DIR`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer


def register(app: typer.Typer) -> None:
    app.command("worker")(worker)


def worker(
    scheduler: Annotated[str, typer.Argument(help="the Dask scheduler, tls://HOST:PORT (or HOST:PORT with --tls); tcp://HOST:PORT only with --insecure")],
    tls: Annotated[Optional[Path], typer.Option("--tls", help="the lab's certificates (`fslab lab init DIR`): ca.pem, worker.pem, worker-key.pem")] = None,
    insecure: Annotated[bool, typer.Option("--insecure", help="allow a plaintext tcp:// scheduler: anyone who reaches it runs code as root here")] = False,
    machine_class: Annotated[Optional[str], typer.Option("--class", help="this machine's class (a study's machine_class picks it), e.g. nvme")] = None,
    name: Annotated[Optional[str], typer.Option(help="the worker's name (default: Dask's)")] = None,
    host: Annotated[Optional[str], typer.Option(help="the address to listen on (default: Dask's choice)")] = None,
    scratch: Annotated[Path, typer.Option(help="where jobs make their images, mounts and outputs")] = Path("/var/tmp/fslab-worker"),
    lock: Annotated[Path, typer.Option(help="this machine's job lock (one job per machine)")] = Path("/run/fslab/worker.lock"),
) -> None:
    """Run jobs sent by `fslab run --executor tls://...`: one at a time (resources bench=1,
    plus class_<CLASS>=1), each through `fslab job run`, until stopped with Ctrl-C."""
    import re
    import sys

    from .errors import MissingCapability, SpecError
    from .executors.lab import scheduler_access

    if machine_class is not None and not re.fullmatch(r"[A-Za-z0-9_-]+", machine_class):
        raise SpecError(f"--class {machine_class!r}: use letters, digits, '-' and '_' only")
    access = scheduler_access("SCHEDULER", scheduler, "worker", tls, insecure)
    try:
        from .executors.dask_worker import serve
    except ImportError:
        raise MissingCapability("fslab worker needs the `distributed` package",
                                fix="pip install 'fslab[dask]'") from None
    if access.warning():
        print(f"warning: {access.warning()}", file=sys.stderr)
    serve(access, machine_class, name=name, host=host, scratch=scratch.resolve(), lock=lock)
