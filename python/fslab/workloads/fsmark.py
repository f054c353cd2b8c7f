"""fs_mark 3.3 (Debian package ``fsmark``): how fast a file system creates files, each
written and (by the sync mode) fsync'ed, by N threads into a directory tree. mmtests'
``fsmark-single``/``fsmark-threaded`` and the Phoronix ``fs-mark`` test run it.

What decides the result, and so what ``--quick`` keeps: the file size, the files per
directory (``files_per_dir``: directory size drives lookup and insert cost), the sync
mode (an fsync per file turns a metadata benchmark into a journal-commit benchmark) and
the thread count. Quick runs only make fewer files.

fs_mark prints one line per iteration (``-L``): ``FSUse% Count Size Files/sec App
Overhead``. Count is cumulative over iterations; Files/sec is that iteration's files
over its elapsed time, all threads together; App Overhead is the microseconds spent
outside the file-writing system calls. The stored ``create_files_per_s`` is all files
over all iterations' time (the rate of the whole run, not a mean of rates).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..metrics import MetricKind
from ..units import given_text, parse_size
from . import ParamError, RunContext, Workload, WorkloadCapabilities, WorkloadResult, register_workload
from .tool_output import check_known, measured, package_version, run_tool, unreadable, whole

# -S: fs_mark's own names, by number (its usage text).
SYNC_MODES = {
    "none": 0,  # no sync() or fsync()
    "fsync": 1,  # fsync() of each file before close
    "sync_fsync": 2,  # sync() once, then fsync() of one file
    "post_reverse_fsync": 3,  # fsync() of every file after writing all, in reverse order
    "sync_post_reverse_fsync": 4,
    "post_fsync": 5,  # fsync() of every file after writing all, in order
    "sync_post_fsync": 6,
}
OPTIONS = {
    "file_size": "bytes per file (-s), default 4 KiB; 0 makes empty files",
    "files": "files each thread creates per iteration (-n), default 10000",
    "threads": "threads, each in its own directory (-t), default 1",
    "files_per_dir": "files per subdirectory before the next (-N); 0 (default): no subdirectories",
    "dirs": "subdirectories per thread when files_per_dir > 0 (-D), default 16",
    "sync": "when files are fsync'ed (-S): " + ", ".join(SYNC_MODES) + " (or 0-6); default fsync",
    "loops": "iterations (-L), default 1; files are kept between them, so directories grow",
    "write_size": "bytes per write() (-w), default 16 KiB",
}
DEFAULTS: dict[str, Any] = {"file_size": 4096, "files": 10000, "threads": 1, "files_per_dir": 0,
                            "dirs": 16, "sync": "fsync", "loops": 1, "write_size": 16384}
DIR = "fsmark"  # under the run's work directory
QUICK_DIVISOR = 8
QUICK_MIN_FILES = 500
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+([0-9.]+)\s+(\d+)\s*$")


@dataclass(frozen=True)
class Iteration:
    """One result line of fs_mark."""

    fs_use_pct: int
    count: int  # files created so far, all threads, cumulative
    size: int  # bytes per file
    files_per_s: float
    app_overhead_us: int


def parse_output(text: str) -> list[Iteration]:
    """Every iteration line after fs_mark's ``FSUse%`` header; WorkloadFailed (with the
    last lines) if there is none or a line under the header has another shape."""
    lines = text.splitlines()
    header = next((i for i, line in enumerate(lines) if line.lstrip().startswith("FSUse%")), None)
    if header is None:
        raise unreadable("fs_mark", "result table (no 'FSUse%' header)", text)
    rows = []
    for line in lines[header + 1:]:
        if not line.strip():
            continue
        match = _ROW.match(line)
        if match is None:
            raise unreadable("fs_mark", f"readable result line (got {line.strip()!r})", text)
        use, count, size, rate, overhead = match.groups()
        rows.append(Iteration(int(use), int(count), int(size), float(rate), int(overhead)))
    if not rows:
        raise unreadable("fs_mark", "result line under its header", text)
    return rows


def metrics_from(rows: list[Iteration], text: str) -> dict[str, float]:
    """The run's files per second (all files over all iterations' time) and app overhead."""
    seconds = 0.0
    previous = 0
    for row in rows:
        rate = measured("fs_mark", "Files/sec", row.files_per_s, text)
        seconds += (row.count - previous) / rate
        previous = row.count
    files = rows[-1].count
    measured("fs_mark", "files created", files, text)
    return {
        "create_files_per_s": files / seconds,
        "app_overhead_ns": sum(r.app_overhead_us for r in rows) * 1000.0,
    }


def sync_number(value: Any) -> int:
    """fs_mark's -S number from a name or a number 0-6."""
    if isinstance(value, str) and value in SYNC_MODES:
        return SYNC_MODES[value]
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 6:
        return value
    raise ParamError("sync", f"{given_text(value)} is not an fs_mark sync mode; use one of {', '.join(SYNC_MODES)} "
                             "(or fs_mark's -S number 0-6)")


class FsMarkWorkload(Workload):
    name = "fsmark"
    capabilities = WorkloadCapabilities(traceable=True)
    tools = {"fs_mark": "fsmark"}
    metrics = {
        "files_per_s": MetricKind("files/s", True, "files handled per second"),
        "app_overhead_ns": MetricKind("ns", False, "time fs_mark spent outside file-writing system calls"),
    }
    example: dict[str, Any] = {}

    def validate(self, params: dict[str, Any]) -> dict[str, Any]:
        check_known("fsmark", params, OPTIONS)
        out = {**DEFAULTS, **params}
        for key in ("file_size", "write_size"):
            try:
                out[key] = parse_size(out[key])
            except ValueError as exc:
                raise ParamError(key, str(exc)) from None
        if out["write_size"] < 1:
            raise ParamError("write_size", "must be at least 1 byte")
        whole("files", out["files"], 1)
        whole("threads", out["threads"], 1, 64)
        whole("files_per_dir", out["files_per_dir"], 0)
        whole("dirs", out["dirs"], 1)
        whole("loops", out["loops"], 1)
        out["sync"] = sync_number(out["sync"])
        return out

    def quick(self, params: dict[str, Any]) -> dict[str, Any]:
        """Fewer files; file size, files per directory, sync mode and threads stay."""
        out = dict(params)
        out["files"] = min(out["files"], max(out["files"] // QUICK_DIVISOR, QUICK_MIN_FILES))
        return out

    def primary_metrics(self, params: dict[str, Any]) -> list[str]:
        return ["create_files_per_s"]

    def tool_versions(self) -> dict[str, str | None]:
        return {"fs_mark": _version()}

    def queue_depth(self, params: dict[str, Any]) -> int:
        return max(1, int(params.get("threads", 1) or 1))  # each thread one file operation at a time

    def data_bytes(self, params: dict[str, Any], inputs: dict[str, str] | None = None) -> int | None:
        # Files are kept between iterations; each takes at least a block on disk.
        per_file = max(params["file_size"], 4096)
        return int(params["files"] * params["threads"] * params["loops"] * per_file)

    def default_timeout_s(self, params: dict[str, Any]) -> float:
        # Generous: 50 files/s (an fsync per file on a slow disk), plus an hour.
        return params["files"] * params["threads"] * params["loops"] / 50 + 3600

    def argv(self, params: dict[str, Any], ctx: RunContext) -> list[str]:
        # fs_mark refuses a -d path of 40 bytes or more: it runs in the work directory and
        # is given a relative one; its log (-l) goes to the artifacts, off the device.
        argv = ["fs_mark", "-d", DIR, "-l", str(ctx.artifact_dir / "fs_log.txt"), "-s", str(params["file_size"]),
                "-n", str(params["files"]), "-t", str(params["threads"]), "-S", str(params["sync"]),
                "-L", str(params["loops"]), "-w", str(params["write_size"]), "-k"]
        if params["files_per_dir"]:
            argv += ["-D", str(params["dirs"]), "-N", str(params["files_per_dir"])]
        return argv

    def run(self, params: dict[str, Any], ctx: RunContext) -> WorkloadResult:
        argv = self.argv(params, ctx)
        done = run_tool(argv, ctx, "fsmark", ctx.timeout_s or self.default_timeout_s(params), cwd=ctx.workdir)
        rows = parse_output(done.stdout)
        expected = params["files"] * params["threads"] * params["loops"]
        if rows[-1].count != expected:
            raise unreadable("fs_mark", f"count of {expected} files (it says {rows[-1].count})",
                             done.stdout + done.stderr)
        metrics = metrics_from(rows, done.stdout)
        info = {"argv": argv, "fs_mark_version": _version(),
                "sync_mode": next(k for k, v in SYNC_MODES.items() if v == params["sync"]),
                "iterations": [r.__dict__ for r in rows]}
        return WorkloadResult(metrics, done.wall_s, info=info)


@cache
def _version() -> str | None:
    """fs_mark has no version option (its banner, printed with results, says 'Version
    3.3'): the Debian package's version says which build ran."""
    return package_version("fsmark")


register_workload(FsMarkWorkload())
