"""`fslab lab init DIR`: the lab's certificate authority and its scheduler, worker and driver
certificates (fslab.executors.lab), and the commands that use them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add the ``lab`` command group to the fslab CLI."""
    lab = typer.Typer(help="The lab network: TLS certificates that admit the Dask scheduler, "
                           "workers and drivers of a lab, and no one else.", no_args_is_help=True)
    app.add_typer(lab, name="lab")

    @lab.command("init")
    def init_cmd(
        directory: Annotated[Path, typer.Argument(help="where the lab's CA and certificates go (made 0700)")],
        days: Annotated[int, typer.Option(min=1, help="how long the certificates are valid, days")] = 825,
    ) -> None:
        """Make a lab CA and certificates for the scheduler, workers and drivers (keys 0600),
        and print the commands that use them."""
        from .errors import SpecError
        from .executors.lab import init_lab

        if days < 1:
            raise SpecError(f"--days {days}: give a number of days of at least 1")
        written = init_lab(directory, days)
        print("\n".join(f"wrote {path}" for path in written))
        print(scheduler_commands(directory.resolve()))


def scheduler_commands(lab: Path, host: str = "SCHEDULER_IP", port: int = 8786) -> str:
    """The three commands of a TLS lab, with this lab's files."""
    return (
        f"\nGive each machine only its role's files (a directory like {lab}, root only, mode 0700): "
        "the scheduler's machine ca.pem, scheduler.pem and scheduler-key.pem; each test machine ca.pem, "
        "worker.pem and worker-key.pem; the machine you run studies from ca.pem, driver.pem and "
        "driver-key.pem. Keep ca-key.pem where no test runs. Dask does not tell roles apart: any "
        "certificate of this lab can submit jobs, so a machine holding a key holds that power.\nThen:\n"
        f"  dask scheduler --protocol tls --host {host} --port {port} --tls-ca-file {lab}/ca.pem "
        f"--tls-cert {lab}/scheduler.pem --tls-key {lab}/scheduler-key.pem --no-dashboard\n"
        "    (Dask's dashboard is plain HTTP with no login: leave it off, or bind it to a trusted "
        "address with --dashboard-address 127.0.0.1:8787)\n"
        f"  fslab worker tls://{host}:{port} --tls {lab}          # on each test machine\n"
        f"  fslab run STUDY --executor tls://{host}:{port} --tls {lab}")
