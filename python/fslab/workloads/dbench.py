"""dbench 4.00 (Debian package ``dbench``): N clients each replaying the NetBench-like
file-server load of its default loadfile (``/usr/share/dbench/client.txt``: creates,
renames, reads, writes, flushes, directory listings of an SMB client) on the file system.
mmtests' ``dbench4`` and the Phoronix ``dbench`` test run it; the client count is the
axis both vary.

Units, from dbench's source (dbench.c): throughput is ``1.0e-6 * bytes / seconds`` "MB/sec",
so 10^6 bytes per second; the per-operation table's AvgLat and MaxLat are milliseconds
printed to three decimals (1 µs resolution), as is ``max_latency``. The first fifth of the
time limit is warm-up: the throughput and the table count only what came after it.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

from ..commands import tool_version
from ..errors import WorkloadFailed
from ..metrics import MetricKind
from ..units import given_text, parse_duration_s
from . import ParamError, RunContext, Workload, WorkloadCapabilities, WorkloadResult, register_workload
from .tool_output import check_known, measured, run_tool, unreadable, whole

LOADFILE = Path("/usr/share/dbench/client.txt")
OPTIONS = {
    "clients": "number of clients, each a process replaying the loadfile (default 1)",
    "runtime": "seconds to run (-t), default 60; dbench warms up for the first fifth",
    "sync": "open files O_SYNC (-s), default 0",
    "sync_dirs": "fsync directories after changing them (-S), default 0",
    "fsync": "fsync after every write (-F), default 0",
}
DEFAULTS: dict[str, Any] = {"clients": 1, "runtime": 60, "sync": 0, "sync_dirs": 0, "fsync": 0}
QUICK_RUNTIME_S = 5  # one warm-up second, four measured ones
MB = 1_000_000  # dbench's "MB" (1.0e-6 * bytes in dbench.c)
MS_NS = 1_000_000
_THROUGHPUT = re.compile(r"^Throughput ([0-9.]+) MB/sec.*?\s(\d+) clients\s+(\d+) procs\s+"
                         r"max_latency=([0-9.]+) ms\s*$", re.M)
_OP = re.compile(r"^\s+([A-Za-z]+)\s+(\d+)\s+(\S+)\s+(\S+)\s*$")


def parse_output(text: str) -> tuple[dict[str, float], dict[str, str], dict[str, dict[str, float]]]:
    """(metrics, notes, per-operation table) from dbench's stdout. Throughput in B/s
    (10^6 per MB), latencies in ns. An operation counted 0 times after warm-up has no
    latency (dbench divides 0 by 0) and is left out, kept in the table; a latency printed
    as 0.000 ms is under dbench's resolution and becomes a note, never a zero."""
    found = _THROUGHPUT.findall(text)
    if len(found) != 1:
        raise unreadable("dbench", "'Throughput ... MB/sec' summary line", text)
    mb_s, _clients, _procs, max_ms = found[0]
    metrics = {
        "throughput_bytes_per_s": measured("dbench", "throughput", float(mb_s), text) * MB,
        "max_latency_ns": float(max_ms) * MS_NS,
    }
    notes: dict[str, str] = {}
    table: dict[str, dict[str, float]] = {}
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.split()[:2] == ["Operation", "Count"]), None)
    if start is None:
        raise unreadable("dbench", "per-operation latency table", text)
    for line in lines[start + 2:]:
        match = _OP.match(line)
        if match is None:
            break
        name, count, avg, peak = match.groups()
        table[name] = {"count": int(count), "lat_mean_ms": float(avg), "lat_max_ms": float(peak)}
        if int(count) > 0:
            for metric, value in ((f"{name.lower()}_lat_mean_ns", float(avg)),
                                  (f"{name.lower()}_lat_max_ns", float(peak))):
                if value > 0:
                    metrics[metric] = value * MS_NS
                else:
                    notes[metric] = "under 0.5 µs: below dbench's resolution (ms to 3 decimals)"
    if not table:
        raise unreadable("dbench", "row in its per-operation latency table", text)
    return metrics, notes, table


class DbenchWorkload(Workload):
    name = "dbench"
    capabilities = WorkloadCapabilities(traceable=True)
    tools = {"dbench": "dbench"}
    metrics = {
        "bytes_per_s": MetricKind("B/s", True, "throughput"),
        "max_latency_ns": MetricKind("ns", False, "longest latency of one operation"),
        "lat_mean_ns": MetricKind("ns", False, "mean latency of one operation"),
        "lat_max_ns": MetricKind("ns", False, "longest latency of one operation"),
    }
    example: dict[str, Any] = {}

    def validate(self, params: dict[str, Any]) -> dict[str, Any]:
        check_known("dbench", params, OPTIONS)
        out = {**DEFAULTS, **params}
        whole("clients", out["clients"], 1, 1024)
        try:
            runtime = parse_duration_s(out["runtime"])
        except ValueError as exc:
            raise ParamError("runtime", str(exc)) from None
        if runtime < 2 or not runtime.is_integer():
            raise ParamError("runtime", f"dbench takes whole seconds, at least 2 (given: {given_text(out['runtime'])})")
        out["runtime"] = int(runtime)
        for key in ("sync", "sync_dirs", "fsync"):
            if out[key] not in (0, 1, True, False):
                raise ParamError(key, f"must be 0 or 1 (given: {given_text(out[key])})")
            out[key] = int(out[key])
        return out

    def quick(self, params: dict[str, Any]) -> dict[str, Any]:
        """A shorter run; the client count and sync options, which decide it, stay."""
        return {**params, "runtime": min(params["runtime"], QUICK_RUNTIME_S)}

    def primary_metrics(self, params: dict[str, Any]) -> list[str]:
        return ["throughput_bytes_per_s", "max_latency_ns"]

    def tool_versions(self) -> dict[str, str | None]:
        return {"dbench": _version()}

    def declared_runtime_s(self, params: dict[str, Any]) -> float | None:
        return float(params["runtime"])

    def default_timeout_s(self, params: dict[str, Any]) -> float:
        # Cleanup (deleting the clients' trees) comes after the time limit.
        return params["runtime"] * 3 + 600

    def argv(self, params: dict[str, Any], ctx: RunContext) -> list[str]:
        argv = ["dbench", "-D", str(ctx.workdir), "-t", str(params["runtime"]), "-c", str(LOADFILE)]
        argv += [flag for key, flag in (("sync", "-s"), ("sync_dirs", "-S"), ("fsync", "-F")) if params[key]]
        return [*argv, str(params["clients"])]

    def run(self, params: dict[str, Any], ctx: RunContext) -> WorkloadResult:
        if not LOADFILE.exists():
            raise WorkloadFailed(f"dbench's loadfile {LOADFILE} is missing (fix: apt-get install --reinstall dbench)")
        argv = self.argv(params, ctx)
        done = run_tool(argv, ctx, "dbench", ctx.timeout_s or self.default_timeout_s(params))
        metrics, notes, table = parse_output(done.stdout)
        info = {"argv": argv, "dbench_version": _version(), "loadfile": str(LOADFILE), "operations": table,
                "units": {"throughput": "MB/s = 10^6 B/s", "latency": "ms"}}
        return WorkloadResult(metrics, float(params["runtime"]), info=info, notes=notes)


@cache
def _version() -> str | None:
    """'dbench version 4.00' is the first line of its help."""
    line = tool_version(["dbench", "--help"])
    return line.split(" - ")[0] if line else None


register_workload(DbenchWorkload())
