"""`fslab scheduler --tls DIR`: the lab's Dask scheduler, TLS only and with no HTTP
dashboard (fslab.executors.closed_http), as `fslab lab init` prints it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    app.command("scheduler")(scheduler)


def scheduler(
    tls: Annotated[Path, typer.Option("--tls", help="the lab's certificates (`fslab lab init DIR`): ca.pem, scheduler.pem, scheduler-key.pem")],
    host: Annotated[str, typer.Option(help="the address to listen on (the one workers and drivers reach)")],
    port: Annotated[int, typer.Option(help="the TLS port", min=1, max=65535)] = 8786,
) -> None:
    """Run the lab's Dask scheduler until stopped with Ctrl-C: mutual TLS with the lab's
    certificates on HOST:PORT and no other port (Dask's HTTP dashboard, which has no login,
    is not served)."""
    from .errors import MissingCapability, SpecError
    from .executors.lab import LabFiles

    if not 0 < port < 65536:
        raise SpecError(f"--port {port}: give a TCP port, 1 to 65535")
    security = LabFiles(tls, "scheduler").check().security()
    try:
        from .executors.closed_http import serve_scheduler
    except ImportError:
        raise MissingCapability("fslab scheduler needs the `distributed` package",
                                fix="pip install 'fslab[dask]'") from None
    serve_scheduler(security, host, port, on_ready=lambda address: print(f"scheduler at {address}", flush=True))
