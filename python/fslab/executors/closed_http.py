"""Dask servers of a closed lab: a scheduler and workers with no HTTP server.

Dask starts an HTTP server in every scheduler and worker whatever ``--no-dashboard`` says
(measured with distributed 2026.8: ``dask scheduler --no-dashboard`` listens on
0.0.0.0:8787; a worker on 0.0.0.0 at a random port). It has no login and shows the lab's
machines, logs and call stacks to anyone who reaches it. A lab's servers speak TLS with the
lab's certificates only (fslab.executors.lab), so their HTTP server is started on the
loopback and closed before the server runs: only the TLS port listens.
"""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")


def without_http(server_class: type[T]) -> type[T]:
    """A subclass of a Dask ``Scheduler`` or ``Worker`` whose HTTP server never listens
    once the server is built (bound to 127.0.0.1 with no routes, then stopped)."""

    class Closed(server_class):  # type: ignore[valid-type, misc]
        def start_http_server(self, routes: Any, dashboard_address: Any, default_port: int = 0,
                              ssl_options: Any = None) -> None:
            super().start_http_server([], "127.0.0.1:0", 0, ssl_options)
            self.http_server.stop()
            self.services.pop("dashboard", None)

    Closed.__name__ = Closed.__qualname__ = f"Closed{server_class.__name__}"
    return Closed


def serve_scheduler(security: Any, host: str, port: int, on_ready: Any = None) -> None:
    """Run a TLS Dask scheduler (``security``: the lab's scheduler files) on ``host:port``
    with no HTTP server, until it is stopped; ``on_ready(address)`` once it listens."""
    import asyncio

    from distributed import Scheduler

    async def main() -> None:
        async with without_http(Scheduler)(host=host, port=port, protocol="tls", security=security,
                                           dashboard=False) as scheduler:
            if on_ready is not None:
                on_ready(scheduler.address)
            await scheduler.finished()

    asyncio.run(main())
