"""sysbench 1.0 ``fileio`` (Debian package ``sysbench``): a database-like I/O load on a
set of files — sequential or random reads and writes in fixed blocks with an fsync every
N requests. The Phoronix ``sysbench`` disk test runs it; mmtests drives sysbench for its
database loads.

sysbench's cycle is prepare / run / cleanup. ``prepare`` lays the files out before the
device counters, caches and traces start (as fio's layout); ``run`` is the measured part;
``cleanup`` only unlinks ``test_file.*``, which fslab does itself when it removes the
run's directory, after the measured window — so the deletions never count as the run's I/O.

Units, as sysbench 1.0.20 prints them: reads/s, writes/s and fsyncs/s are operations
over the run's total time; "MiB/s" is 2^20 bytes per second; latencies are milliseconds
(the summary with 2 decimals, the histogram buckets with 3). fslab takes the mean latency
from ``sum / events`` (exact where the 2-decimal "avg" would round to 0) and the
percentiles from the histogram (``--histogram=on``): the first bucket where the
cumulative count reaches p% — the way sysbench computes its own ``--percentile``.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from ..commands import tool_version
from ..metrics import MetricKind
from ..units import given_text, parse_duration_s, parse_size
from . import (
    ParamError,
    RunContext,
    Workload,
    WorkloadCapabilities,
    WorkloadResult,
    quick_size,
    register_workload,
)
from .tool_output import check_known, measured, run_tool, unreadable, whole

MODES = ("seqwr", "seqrewr", "seqrd", "rndrd", "rndwr", "rndrw")
READS = {"seqrd", "rndrd", "rndrw"}
WRITES = {"seqwr", "seqrewr", "rndwr", "rndrw"}
FLAGS = ("sync", "dsync", "direct")
OPTIONS = {
    "mode": "test mode (--file-test-mode): " + ", ".join(MODES),
    "file_total_size": "bytes over all files (--file-total-size), default 1 GiB",
    "files": "number of files (--file-num), default 128",
    "block_size": "bytes per request (--file-block-size), default 16 KiB",
    "fsync_freq": "fsync every file after this many requests, 0 for none (--file-fsync-freq), default 100",
    "fsync_end": "fsync at the end of the test (--file-fsync-end), default 1",
    "fsync_mode": "fsync or fdatasync (--file-fsync-mode), default fsync",
    "rw_ratio": "reads per write in rndrw (--file-rw-ratio), default 1.5",
    "extra_flags": "open flags: '' (buffered, default), sync, dsync or direct (--file-extra-flags)",
    "threads": "threads (--threads), default 1",
    "runtime": "seconds of the run phase (--time), default 30",
}
DEFAULTS: dict[str, Any] = {"mode": "rndrw", "file_total_size": 1 << 30, "files": 128, "block_size": 16384,
                            "fsync_freq": 100, "fsync_end": 1, "fsync_mode": "fsync", "rw_ratio": 1.5,
                            "extra_flags": "", "threads": 1, "runtime": 30}
QUICK_RUNTIME_S = 3
MIB = 1 << 20
MS_NS = 1_000_000
PERCENTILES = (50, 95, 99)
_LINE = re.compile(r"^\s*([A-Za-z0-9 ,/()]+?):\s+([0-9.]+)s?\s*$")
_BUCKET = re.compile(r"^\s*([0-9.]+)\s+\|[* ]*\s(\d+)\s*$")


def parse_run(text: str, mode: str, periodic_fsync: bool) -> dict[str, float]:
    """Metrics of one ``sysbench fileio run`` output (stdout, ``--histogram=on``): the
    rates of what the mode does, throughput in B/s, latency mean, max and percentiles in
    ns. A rate the mode should have but printed as 0 fails the run (nothing was done);
    fsyncs/s is required with a periodic fsync, kept when only the final ones made it
    above 0 (a long run's few end-of-test fsyncs may print as 0.00)."""
    values: dict[str, float] = {}
    for line in text.splitlines():
        match = _LINE.match(line)
        if match:
            values.setdefault(match.group(1).strip(), float(match.group(2)))
    need = ["reads/s", "writes/s", "fsyncs/s", "total time", "total number of events", "max", "sum"]
    missing = [key for key in need if key not in values]
    if missing:
        raise unreadable("sysbench", f"'{missing[0]}' line", text)
    out: dict[str, float] = {}
    if mode in READS:
        out["reads_per_s"] = measured("sysbench", "reads/s", values["reads/s"], text)
        out["read_bytes_per_s"] = measured("sysbench", "read MiB/s", values.get("read, MiB/s", 0.0), text) * MIB
    if mode in WRITES:
        out["writes_per_s"] = measured("sysbench", "writes/s", values["writes/s"], text)
        out["write_bytes_per_s"] = measured("sysbench", "written MiB/s",
                                            values.get("written, MiB/s", 0.0), text) * MIB
        if periodic_fsync:
            out["fsyncs_per_s"] = measured("sysbench", "fsyncs/s", values["fsyncs/s"], text)
        elif values["fsyncs/s"] > 0:
            out["fsyncs_per_s"] = values["fsyncs/s"]
    events = measured("sysbench", "total number of events", values["total number of events"], text)
    out["lat_mean_ns"] = measured("sysbench", "latency sum", values["sum"], text) * MS_NS / events
    out["lat_max_ns"] = measured("sysbench", "latency max", values["max"], text) * MS_NS
    buckets = parse_histogram(text)
    for p in PERCENTILES:
        out[f"lat_p{p}_ns"] = measured("sysbench", f"latency p{p}", percentile_ms(buckets, p), text) * MS_NS
    return out


def parse_histogram(text: str) -> list[tuple[float, int]]:
    """(bucket value in ms, count) rows of sysbench's latency histogram, in order."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("Latency histogram")), None)
    if start is None:
        raise unreadable("sysbench", "latency histogram (--histogram=on)", text)
    rows = []
    for line in lines[start + 2:]:
        match = _BUCKET.match(line)
        if match is None:
            break
        rows.append((float(match.group(1)), int(match.group(2))))
    if not rows:
        raise unreadable("sysbench", "row in its latency histogram", text)
    return rows


def percentile_ms(buckets: list[tuple[float, int]], p: float) -> float:
    """The first bucket value at which the cumulative count reaches p% of all (p 0-100)."""
    total = sum(count for _, count in buckets)
    need = total * p / 100
    running = 0
    for value, count in buckets:
        running += count
        if running >= need:
            return value
    return buckets[-1][0]


class SysbenchWorkload(Workload):
    name = "sysbench"
    capabilities = WorkloadCapabilities(traceable=True)
    tools = {"sysbench": "sysbench"}
    metrics = {
        "reads_per_s": MetricKind("reads/s", True, "read requests per second"),
        "writes_per_s": MetricKind("writes/s", True, "write requests per second"),
        "fsyncs_per_s": MetricKind("fsyncs/s", True, "fsync calls per second"),
        "bytes_per_s": MetricKind("B/s", True, "throughput"),
        "lat_mean_ns": MetricKind("ns", False, "mean latency"),
        "lat_max_ns": MetricKind("ns", False, "longest latency of one operation"),
        **{f"lat_p{p}_ns": MetricKind("ns", False, f"{p}th percentile latency") for p in PERCENTILES},
    }
    example: dict[str, Any] = {}

    def validate(self, params: dict[str, Any]) -> dict[str, Any]:
        check_known("sysbench", params, OPTIONS)
        out = {**DEFAULTS, **params}
        if out["mode"] not in MODES:
            raise ParamError("mode", f"{out['mode']!r} is not a sysbench fileio mode; use one of {', '.join(MODES)}")
        for key in ("file_total_size", "block_size"):
            try:
                out[key] = parse_size(out[key])
            except ValueError as exc:
                raise ParamError(key, str(exc)) from None
        whole("files", out["files"], 1)
        whole("threads", out["threads"], 1, 1024)
        whole("fsync_freq", out["fsync_freq"], 0)
        if out["block_size"] < 1 or out["block_size"] > out["file_total_size"] // out["files"]:
            raise ParamError("block_size", f"must be from 1 byte to one file's size "
                                           f"(file_total_size / files = {out['file_total_size'] // out['files']})")
        if out["fsync_end"] not in (0, 1, True, False):
            raise ParamError("fsync_end", f"must be 0 or 1 (given: {given_text(out['fsync_end'])})")
        out["fsync_end"] = int(out["fsync_end"])
        if out["fsync_mode"] not in ("fsync", "fdatasync"):
            raise ParamError("fsync_mode", f"must be fsync or fdatasync (given: {given_text(out['fsync_mode'])})")
        if out["extra_flags"] not in ("", *FLAGS):
            raise ParamError("extra_flags",
                             f"must be '' or one of {', '.join(FLAGS)} (given: {given_text(out['extra_flags'])})")
        if isinstance(out["rw_ratio"], bool) or not isinstance(out["rw_ratio"], (int, float)) or out["rw_ratio"] <= 0:
            raise ParamError("rw_ratio", f"must be a number above 0 (given: {given_text(out['rw_ratio'])})")
        try:
            runtime = parse_duration_s(out["runtime"])
        except ValueError as exc:
            raise ParamError("runtime", str(exc)) from None
        if runtime < 1 or not runtime.is_integer():
            raise ParamError("runtime",
                             f"sysbench takes whole seconds, at least 1 (given: {given_text(out['runtime'])})")
        out["runtime"] = int(runtime)
        return out

    def quick(self, params: dict[str, Any]) -> dict[str, Any]:
        """Smaller files and a shorter run; mode, block size, fsync frequency and flags stay,
        and the memory limit follows the data (fslab.plan scales it by data_bytes)."""
        out = dict(params)
        out["file_total_size"] = quick_size(out["file_total_size"])
        out["block_size"] = min(out["block_size"], out["file_total_size"] // out["files"])
        out["runtime"] = min(out["runtime"], QUICK_RUNTIME_S)
        return out

    def primary_metrics(self, params: dict[str, Any]) -> list[str]:
        mode = params["mode"]
        names = ["reads_per_s"] if mode in READS else []
        names += ["writes_per_s"] if mode in WRITES else []
        return [*names, "lat_p95_ns"]

    def tool_versions(self) -> dict[str, str | None]:
        return {"sysbench": _version()}

    def data_bytes(self, params: dict[str, Any], inputs: dict[str, str] | None = None) -> int | None:
        return int(params["file_total_size"])

    def declared_runtime_s(self, params: dict[str, Any]) -> float | None:
        return float(params["runtime"])

    def queue_depth(self, params: dict[str, Any]) -> int:
        return max(1, int(params.get("threads", 1) or 1))  # one synchronous request per thread

    def default_timeout_s(self, params: dict[str, Any]) -> float:
        # The run phase, plus laying out the files at 20 MB/s and the final fsync.
        return params["runtime"] * 2 + params["file_total_size"] / 20e6 + 600

    def argv(self, params: dict[str, Any], phase: str) -> list[str]:
        argv = ["sysbench", "fileio", f"--file-total-size={params['file_total_size']}",
                f"--file-num={params['files']}", f"--file-block-size={params['block_size']}",
                f"--file-test-mode={params['mode']}", f"--threads={params['threads']}"]
        if params["extra_flags"]:
            argv.append(f"--file-extra-flags={params['extra_flags']}")
        if phase == "run":
            argv += [f"--file-fsync-freq={params['fsync_freq']}",
                     f"--file-fsync-end={'on' if params['fsync_end'] else 'off'}",
                     f"--file-fsync-mode={params['fsync_mode']}", f"--file-rw-ratio={params['rw_ratio']}",
                     f"--time={params['runtime']}", "--events=0", "--histogram=on", "--percentile=95"]
        return [*argv, phase]

    def prepare(self, params: dict[str, Any], ctx: RunContext) -> bool:
        """``sysbench fileio prepare``: the files, written before anything is measured."""
        run_tool(self.argv(params, "prepare"), ctx, "sysbench-prepare",
                 ctx.timeout_s or self.default_timeout_s(params), cwd=ctx.workdir, limited=False)
        return True

    def run(self, params: dict[str, Any], ctx: RunContext) -> WorkloadResult:
        if not any(ctx.workdir.glob("test_file.*")):  # called without prepare (tests, other drivers)
            self.prepare(params, ctx)
        argv = self.argv(params, "run")
        done = run_tool(argv, ctx, "sysbench", ctx.timeout_s or self.default_timeout_s(params), cwd=ctx.workdir)
        metrics = parse_run(done.stdout, params["mode"], params["fsync_freq"] > 0)
        info = {"argv": argv, "sysbench_version": _version(), "percentile_method": "histogram buckets",
                "units": {"rates": "per second", "throughput": "MiB/s = 2^20 B/s", "latency": "ms"}}
        return WorkloadResult(metrics, float(params["runtime"]), info=info)


@cache
def _version() -> str | None:
    """'sysbench 1.0.20'."""
    return tool_version(["sysbench", "--version"])


register_workload(SysbenchWorkload())
