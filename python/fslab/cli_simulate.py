"""`fslab simulate`: replay a request list or a synthetic stream on a device model and
print the prediction (a table, or JSON with ``--json``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from .errors import SpecError
from .mechanisms import table_rows
from .predictions import cache_warning


def register(app: typer.Typer) -> None:
    """Add the ``simulate`` command to the fslab CLI."""

    @app.command()
    def simulate(
        trace: Annotated[Optional[Path], typer.Argument(help="request list: .csv (time_ns,op,sector,bytes) or trace .parquet")] = None,
        model: Annotated[str, typer.Option("--model", "-m", help="model preset, e.g. hdd-7200, sata-mlc-ssd, raid5-8x-sata-mlc-ssd")] = "sata-mlc-ssd",
        qd: Annotated[int, typer.Option("--qd", min=1, help="closed-loop queue depth (requests outstanding, at least 1; --open-loop for none)")] = 1,
        open_loop: Annotated[bool, typer.Option("--open-loop", help="issue at the trace's own timestamps instead")] = False,
        synthetic: Annotated[Optional[str], typer.Option("--synthetic", help="stream in place of a trace: rw=randwrite,bs=4k,count=N,span=BYTES,seed=S")] = None,
        set_: Annotated[Optional[list[str]], typer.Option("--set", help=(
            "override a model parameter: NAME=VALUE (repeatable; a switch takes true or false, `write_cache=false`; "
            "true and false for any other parameter are refused)"))] = None,
        as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
        list_models: Annotated[bool, typer.Option("--list-models", help="list model presets and exit")] = False,
    ) -> None:
        """Predict how an I/O stream would fare on a modelled HDD, SSD or RAID (a prediction,
        not a measurement)."""
        from . import simulate as sim

        if list_models:
            for name in sim.model_names():
                print(name)
            return
        overrides = sim.parse_set(set_ or [])
        if (trace is None) == (synthetic is None):
            raise SpecError("give either a TRACE file or --synthetic SPEC", field="simulate")
        if synthetic is not None:
            result = sim.simulate_synthetic(synthetic, model, overrides, qd=qd, open_loop=open_loop)
        else:
            assert trace is not None  # exactly one of the two is given (checked above)
            requests = sim.read_requests(trace)
            if not requests:
                raise SpecError("holds no requests: a prediction needs at least 1", source=str(trace))
            result = sim.simulate_requests(requests, model, overrides, qd=qd, open_loop=open_loop,
                                           source=str(trace))
        if as_json:
            print(json.dumps(result, indent=2, sort_keys=True))
            return
        _print_table(result)


def _print_table(r: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    mode = f"closed loop, queue depth {r['qd']}" if r["qd"] else "open loop"
    table = Table(title=f"PREDICTION on model {r['model']} ({mode}) — {r['source']}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    lat_us = {k: v / 1e3 for k, v in r["latency_ns"].items()}  # the core gives ns; this table prints us
    rows = [
        ("requests (count)", f"{r['requests']}"),
        ("simulated time (s)", f"{r['elapsed_ns'] / 1e9:.3f}"),
        ("IOPS (requests/s)", f"{r['iops']:.1f}"),
        ("throughput (MB/s, 10^6 B)", f"{r['mb_per_s']:.1f}"),
        ("latency mean (us)", f"{lat_us['mean']:.1f}"),
        ("latency p50 (us)", f"{lat_us['p50']:.1f}"),
        ("latency p99 (us)", f"{lat_us['p99']:.1f}"),
        ("latency max (us)", f"{lat_us['max']:.1f}"),
        ("write amplification, whole trace (media/host bytes)", f"{r['write_amplification']:.3f}"),
        ("GC runs (count)", f"{r['gc_runs']}"),
        ("erases (count)", f"{r['erases']}"),
    ]
    for k, v in sorted(r["counters"].items()):
        if k in ("gc_runs", "erases"):
            continue
        unit = "bytes" if k.endswith("_bytes") else "count"
        rows.append((f"{k} ({unit})", f"{v}"))
    facts = r.get("model_facts", {})
    if "write_amplification_steady" in facts:
        rows.append(("write amplification, steady state: second half of the writes (media/host bytes)",
                     f"{facts['write_amplification_steady']:.3f}"))
        rows.append(("steady-state window (bytes written by the host)", f"{facts['steady_window_host_bytes']:.0f}"))
    if "over_provisioning_simulated" in facts:
        rows.append(("over-provisioning asked (fraction)", f"{facts['over_provisioning_requested']:.4f}"))
        rows.append(("over-provisioning simulated, whole blocks per plane (fraction)",
                     f"{facts['over_provisioning_simulated']:.4f}"))
        rows.append(("over-provisioning usable, after per-plane GC reserve (fraction)",
                     f"{facts['over_provisioning_usable']:.4f}"))
    if "write_cache" in facts:
        rows.append(("write cache assumed (on/off, size)",
                     f"on, {int(facts['cache_bytes']) >> 20} MiB" if facts["write_cache"] else "off"))
    if "controller_cache_bytes" in facts:
        cache = int(facts["controller_cache_bytes"])
        rows.append(("RAID controller write-back cache assumed (MiB; 0: none, as md)", f"{cache >> 20}"))
    if "write_cache_absorbed_fraction" in facts:
        rows.append(("written bytes acknowledged by the write cache (fraction)",
                     f"{facts['write_cache_absorbed_fraction']:.3f}"))
    rows += table_rows(r.get("time_by_mechanism_ns", {}), str(r.get("params", {}).get("kind", "")))
    for k, v in rows:
        table.add_row(k, v)
    console = Console()
    console.print(table)
    warning = cache_warning(r["model"], facts.get("write_cache_absorbed_fraction"), facts)
    if warning:
        console.print(f"[bold yellow]WARNING[/bold yellow] {warning}", highlight=False)
