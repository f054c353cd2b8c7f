"""`fslab trace`: capture a block-layer trace around a command, import traces taken
elsewhere (tracefs text, blk tracer text, blkparse text), analyse and plot them."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from .errors import FslabError, SpecError


def _label(path: Path) -> str:
    name = path.name
    for suffix in (".parquet", ".txt"):
        name = name.removesuffix(suffix)
    return name


def _fmt(value: Any, unit: str, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f} {unit}".strip()
    return f"{value:,} {unit}".strip()


def print_summary(label: str, r: dict[str, Any]) -> None:
    """A terminal table of one trace's metrics (every number with its unit)."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    lossy = "" if r["complete"] else f"  [red]INCOMPLETE: {r['lost_events']} events lost[/red]"
    lost = "unknown" if r["lost_events"] is None else f"{r['lost_events']} events"
    console.print(f"[bold]{label}[/bold]: {r['events']:,} events over {r['duration_s']:.3f} s, "
                  f"lost {lost}{lossy}")
    t = Table(title_justify="left")
    for col in ("", "read", "write"):
        t.add_column(col, justify="right")
    rq, sz, lat = r["requests"], r["size_bytes"], r["latency_ns"]
    t.add_row("requests", _fmt(rq["read"], "req"), _fmt(rq["write"], "req"))
    t.add_row("sectors", _fmt(r["sectors"]["read"], "sect"), _fmt(r["sectors"]["write"], "sect"))
    for key in ("min", "median", "mean", "max", "p90", "p99"):
        t.add_row(f"size {key}", *(_fmt(None if sz[d][key] is None else sz[d][key] / 1024, "KiB", 2)
                                   for d in ("read", "write")))
    t.add_row("sequential", *(_fmt(None if r["sequential_fraction"][d] is None
                                   else 100 * r["sequential_fraction"][d], "%") for d in ("read", "write")))
    for key in ("mean", "p50", "p99"):
        t.add_row(f"latency {key}", *(_fmt(None if lat[d][key] is None else lat[d][key] / 1000, "µs")
                                      for d in ("read", "write")))
    console.print(t)
    console.print(f"flush {rq['flush']:,} req, discard {rq['discard']:,} req; flags on completed "
                  f"requests: " + ", ".join(f"{k} {v:,} req" for k, v in r["flags"].items()))
    if r.get("write_amplification") is not None:
        console.print(f"device bytes written per workload byte: {r['write_amplification']:.3f}")
    if r["by_task"]:
        console.print("issued by: " + ", ".join(
            f"{t['task']} {t['requests']:,} req / {t['bytes'] / 2**20:,.1f} MiB" for t in r["by_task"]))


def register(app: typer.Typer) -> None:
    """Add the ``trace`` sub-command family to the fslab CLI."""
    trace_app = typer.Typer(no_args_is_help=True, help="Block-layer traces: capture, import, analyze, plot.")
    app.add_typer(trace_app, name="trace")

    @trace_app.command("capture")
    def capture(
        command: Annotated[list[str], typer.Argument(help="command to run while tracing (after --)")],
        device: Annotated[str, typer.Option("--device", "-d", help="block device to trace, e.g. /dev/loop3")],
        out: Annotated[Optional[Path], typer.Option("--out", "-o", help="trace file (.parquet)")] = None,
        method: Annotated[str, typer.Option(help="reader: raw (per-CPU pages), text (trace_pipe) or auto")] = "auto",
        buffer_kb: Annotated[int, typer.Option(min=4, help="ring buffer per CPU, KiB (at least 4)")] = 16384,
        as_json: Annotated[bool, typer.Option("--json", help="print the metrics as JSON")] = False,
    ) -> None:
        """Trace DEVICE while COMMAND runs: `fslab trace capture -d /dev/loop3 -- fio job.fio`.
        COMMAND runs in a session of its own: Ctrl-C or SIGTERM stops it and everything it
        started, and the capture is removed."""
        from .analysis.traces import analyze
        from .commands import kill_tree
        from .devices import handle_for, queue_facts, untraceable_partition, whole_disk_of
        from .signals import install_handlers
        from .trace import write_parquet
        from .trace.capture import TraceCapture

        install_handlers()  # SIGTERM and SIGHUP unwind like Ctrl-C: the tracefs instance goes

        try:
            dev = handle_for(device)
        except (OSError, ValueError) as exc:
            raise SpecError(f"{device}: {exc}", field="--device") from None
        why = untraceable_partition(dev)
        if why:
            raise SpecError(f"{why}: trace /dev/{whole_disk_of(dev.sysfs_name)} (with its other partitions' I/O)",
                            field="--device")
        if queue_facts(dev.sysfs_name).get("size_bytes") == 0:
            # No medium (an unattached loop device, an empty drive): no request can reach
            # it, and a capture would end with 0 events as if the command did no I/O.
            backing = Path(f"/sys/block/{dev.sysfs_name}/loop/backing_file")
            fix = (f"its backing file {backing.read_text().strip()} holds no whole 512-byte sector: make it larger" if backing.exists()
                   else f"attach its backing file first (losetup {device} FILE)")
            raise SpecError(f"{device} has no medium (size 0): {fix}, or name another device", field="--device")
        out = out or Path(f"trace-{dev.sysfs_name}-{time.strftime('%Y%m%d-%H%M%S')}.parquet")
        with TraceCapture(dev.dev_t, method=method, buffer_kb=buffer_kb, device_name=dev.path) as cap:
            try:
                proc = subprocess.Popen(command, start_new_session=True)
            except FileNotFoundError:
                raise SpecError(f"command not found: {command[0]}", field="command") from None
            try:
                rc = proc.wait()
            except BaseException:
                kill_tree(proc)
                raise
        assert cap.trace is not None
        cap.trace.meta["command"] = command
        cap.trace.meta["command_exit_status"] = rc
        write_parquet(cap.trace, out)
        result = analyze(cap.trace)
        if as_json:
            print(json.dumps({"trace": str(out), **result}, indent=2))
        else:
            print_summary(str(out), result)
            print(f"trace written to {out} ({len(cap.trace):,} events)")
        if rc != 0:
            raise FslabError(f"the traced command exited with status {rc} (trace kept in {out})")

    @trace_app.command("import")
    def import_(
        file: Annotated[Path, typer.Argument(help="tracefs text, blk tracer text or blkparse output")],
        out: Annotated[Path, typer.Option("--out", "-o", help="Parquet file to write")],
        fmt: Annotated[str, typer.Option("--format", help="auto, tracefs-text, blk-tracer-text, blkparse-text, parquet")] = "auto",
    ) -> None:
        """Convert a trace taken elsewhere into fslab's Parquet format."""
        from .trace import load_trace, write_parquet

        trace = load_trace(file, fmt)
        write_parquet(trace, out)
        print(f"{len(trace):,} events ({trace.meta.get('format')}) written to {out}")

    @trace_app.command("analyze")
    def analyze_cmd(
        files: Annotated[list[Path], typer.Argument(help="traces in any supported format")],
        as_json: Annotated[bool, typer.Option("--json", help="one JSON object per trace, one per line")] = False,
        workload_bytes: Annotated[Optional[int], typer.Option(min=1, help="bytes the workload wrote (for write amplification)")] = None,
        cdf: Annotated[bool, typer.Option(help="include the size CDFs in the JSON")] = False,
    ) -> None:
        """I/O counts, sizes, sequentiality, seeks, latency and issuing tasks of each trace."""
        from .analysis.traces import analyze
        from .trace import load_trace

        for f in files:
            result = analyze(load_trace(f), workload_bytes_written=workload_bytes, with_cdf=cdf)
            if as_json:
                print(json.dumps({"trace": str(f), **result}))
            else:
                print_summary(str(f), result)

    @trace_app.command("plot")
    def plot(
        files: Annotated[list[Path], typer.Argument(help="traces to plot")],
        out: Annotated[Path, typer.Option("--out", "-o", help="directory for the PNG files")] = Path("trace-plots"),
    ) -> None:
        """Size CDFs overlaid, LBA over time and IOPS over time of each trace (PNG)."""
        from .report.trace_plots import plot_all
        from .trace import load_trace

        traces = {_label(f): load_trace(f) for f in files}
        for path in plot_all(traces, out):
            print(path)
