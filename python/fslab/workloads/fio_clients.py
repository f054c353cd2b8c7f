"""fio's client/server mode for the fio workload (``clients = ["host1:8765", ...]``): one
job run at once from many ``fio --server`` hosts against shared storage.

fio is given a hosts file (every server gets the same job, and fio names each server's
files after its address, so hosts sharing one directory never share a file). Its JSON
report then has ``client_stats``: one entry per job per host, and an "All clients" entry
whose ``job_runtime`` is the sum over hosts, not the time they ran; so rates are
recomputed here from each host's ``io_bytes`` and its own runtime. A server that cannot
be reached makes fio print an error before the JSON and still exit 0: the hosts that
reported are counted and the run fails if any is missing.

The fio server is an unauthenticated service that runs whatever job a client sends it,
as the user it runs as (root, to reach devices): bind it to a lab network only.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..errors import WorkloadFailed
from . import ParamError

ALL_CLIENTS = "All clients"
DEFAULT_PORT = 8765
_HOST = re.compile(r"^[A-Za-z0-9._-]+$")


def parse_clients(value: Any) -> list[str]:
    """``["host", "host:port", ...]`` checked and written as ``host:port``."""
    if not isinstance(value, list) or not value:
        raise ParamError("clients", "must be a list of fio servers, e.g. [\"10.0.0.2:8765\", \"10.0.0.3:8765\"]")
    out = []
    for item in value:
        host, _, port = str(item).rpartition(":") if ":" in str(item) else (str(item), "", str(DEFAULT_PORT))
        if not _HOST.match(host) or not port.isdigit() or not 0 < int(port) < 65536:
            raise ParamError("clients", f"{item!r} is not HOST or HOST:PORT (an IPv4 address or host name, "
                             "port 1-65535)")
        out.append(f"{host}:{int(port)}")
    if len(set(out)) != len(out):
        raise ParamError("clients", f"names a server twice: {out}")
    return out


def hosts_file(clients: list[str], path: Path) -> Path:
    """fio's hosts file: one ``host,port`` a line."""
    path.write_text("".join(c.replace(":", ",") + "\n" for c in clients))
    return path


def client_metrics(report: dict[str, Any], clients: list[str], stderr: str) -> tuple[dict[str, float], float]:
    """Per-host and overall metrics from a client-mode report, and the longest host's
    runtime in seconds. Raises WorkloadFailed when a host is missing from the report.

    For host i (its index in ``clients``): ``client<i>_<dir>_io_bytes``,
    ``client<i>_<dir>_bw_bytes_per_s`` and ``client<i>_<dir>_iops`` over that host's own
    runtime (its jobs' longest). Overall ``<dir>_io_bytes`` sums the hosts; ``iops`` and
    ``bw_bytes_per_s`` are all hosts' work over the longest host's runtime (the hosts ran
    at the same time)."""
    entries = [e for e in report.get("client_stats") or [] if e.get("jobname") != ALL_CLIENTS]
    by_host: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        by_host.setdefault(f"{entry.get('hostname')}:{entry.get('port')}", []).append(entry)
    missing = [c for c in clients if c not in by_host]
    if missing or len(by_host) != len(clients):
        said = " ".join(line.strip() for line in stderr.splitlines() if line.startswith("fio:"))[-600:]
        raise WorkloadFailed(f"{len(by_host)} of {len(clients)} fio servers reported; missing: "
                             f"{', '.join(missing) or 'unknown'} (reported: {', '.join(sorted(by_host)) or 'none'})"
                             + (f"; fio says: {said}" if said else ""))
    for entry in entries:
        if entry.get("error"):
            raise WorkloadFailed(f"fio job {entry.get('jobname')!r} on {entry.get('hostname')} failed "
                                 f"with error {entry['error']}")
    metrics: dict[str, float] = {"clients_count": float(len(by_host))}
    longest_ms = 0.0
    totals: dict[str, list[float]] = {}
    for index, client in enumerate(clients):
        host_entries = by_host[client]
        for direction in ("read", "write", "trim"):
            sections = [e[direction] for e in host_entries if e.get(direction, {}).get("total_ios", 0) > 0]
            if not sections:
                continue
            io_bytes = sum(float(s["io_bytes"]) for s in sections)
            ios = sum(float(s["total_ios"]) for s in sections)
            runtime_ms = max(float(s["runtime"]) for s in sections)
            longest_ms = max(longest_ms, runtime_ms)
            prefix = f"client{index}_{direction}"
            metrics[f"{prefix}_io_bytes"] = io_bytes
            metrics[f"{prefix}_runtime_ms"] = runtime_ms
            if runtime_ms > 0:
                metrics[f"{prefix}_bw_bytes_per_s"] = io_bytes / (runtime_ms / 1000.0)
                metrics[f"{prefix}_iops"] = ios / (runtime_ms / 1000.0)
            total = totals.setdefault(direction, [0.0, 0.0])
            total[0] += io_bytes
            total[1] += ios
    if longest_ms > 0:
        seconds = longest_ms / 1000.0
        for direction, (io_bytes, ios) in totals.items():
            metrics[f"{direction}_io_bytes"] = io_bytes
            metrics[f"{direction}_bw_bytes_per_s"] = io_bytes / seconds
            metrics[f"{direction}_iops"] = ios / seconds
        metrics["bw_bytes_per_s"] = sum(t[0] for t in totals.values()) / seconds
        metrics["iops"] = sum(t[1] for t in totals.values()) / seconds
    return metrics, longest_ms / 1000.0
