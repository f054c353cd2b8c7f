"""`fslab models`: list the device models with their kind, description and sources, or
show one model's parameters, each with its cited source, and the device's published
measurements."""

from __future__ import annotations

from typing import Annotated, Optional

import typer


def register(app: typer.Typer) -> None:
    """Add the ``models`` command to the fslab CLI."""

    @app.command()
    def models(
        name: Annotated[Optional[str], typer.Argument(help="a model to show in full, e.g. samsung-840pro-256")] = None,
    ) -> None:
        """List the device models (named real devices with their sources, generic classes,
        and the raidN-Mx-PRESET pattern), or show one model's parameters and sources."""
        from rich.console import Console

        console = Console()
        if name is None:
            _list(console)
        else:
            _show(console, name)


def _list(console: object) -> None:
    from rich.console import Console
    from rich.table import Table

    from .model_catalog import RAID_PATTERN, catalog

    assert isinstance(console, Console)
    table = Table(title="Device models (`fslab models NAME` for parameters and sources)")
    table.add_column("model", no_wrap=True)
    for col in ("kind", "description", "sources"):
        table.add_column(col)
    for e in catalog():
        if e.named:
            cites = f"{', '.join(e.sources)}; published figures: {len(e.published)}"
        else:
            cites = "generic class model: no device, no sources"
        table.add_row(e.name, e.kind, e.description, cites)
    table.add_row(RAID_PATTERN[0], "raid", RAID_PATTERN[1], "its members' sources")
    console.print(table)


def _show(console: object, name: str) -> None:
    from rich.console import Console
    from rich.table import Table

    from .model_catalog import load_model

    assert isinstance(console, Console)
    e = load_model(name)
    console.print(f"[bold]{e.name}[/bold] ({e.kind}): {e.description}", highlight=False)
    params = Table(title="parameters, as the file sets them (units in the name: _us, _ms, _mb_per_s (10^6 B/s), _bytes)")
    params.add_column("parameter", no_wrap=True)
    params.add_column("value", justify="right")
    params.add_column("source")
    for key, value in e.params.items():
        params.add_row(key, str(value), e.source_of(key) or ("—" if not e.named else "MISSING"))
    console.print(params)
    if e.published:
        pub = Table(title="published measurements of the device (corners)")
        for col in ("corner", "workload", "value", "source"):
            pub.add_column(col)
        for c in e.published:
            if c.rw in ("seek", "rotation"):
                workload = f"average {c.rw}"
            else:
                workload = f"{c.rw} bs={c.bs} qd={c.qd} span={c.span}" + (" fresh" if c.fresh else "")
            flags = " (a parameter is derived from it)" if c.derived else ""
            pub.add_row(c.corner, workload, f"{c.value:g} {c.unit}{flags}", e.sources.get(c.source, c.source))
        console.print(pub)
    if e.sources:
        src = Table(title="sources")
        src.add_column("key")
        src.add_column("citation")
        for key, text in e.sources.items():
            src.add_row(key, text)
        console.print(src)
    elif not e.named:
        console.print("A generic class model: its parameters describe a class of devices, not a named one.")
