"""PostMark 1.5x (Debian package ``postmark``): the mail/news-server load of NetApp's
1997 benchmark — a pool of small files of random sizes, then transactions that each
create or delete a file and read or append one, then deletion of the rest. mmtests and
the Phoronix ``postmark`` test run it.

What decides the result, and so what ``--quick`` keeps: the file-size range, the pool
size relative to memory (fslab keeps the data-to-memory ratio through ``data_bytes``),
the biases and block sizes — and the transaction count, since PostMark's timer counts
whole seconds (below): ``--quick`` leaves a PostMark run as it is.

Two PostMark facts shape this module:

- It times in whole seconds (differences of ``time()``, each within 1 s of the truth).
  Its rates are counts over those seconds, so a run of N seconds has rates good to about
  1/N; fslab stores the exact counts (in the run's info) and the rates over PostMark's
  own seconds. A span timed at 0 or 1 s has notes instead of rates, never a number off
  by a factor of two, an infinite or a zero one. Give runs enough transactions to last
  tens of seconds when the rates matter.
- It prints ``Error: ...`` lines (a file it could not open, write or delete) and still
  exits 0: any such line fails the run, with PostMark's last lines.

Units: PostMark's "kilobytes"/"megabytes" are 1024 and 1024^2 bytes (it shows a 10000-byte
bound as "9.77 kilobytes"); fslab stores bytes per second.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from ..errors import WorkloadFailed
from ..metrics import MetricKind
from ..units import given_text, parse_size
from . import ParamError, RunContext, Workload, WorkloadCapabilities, WorkloadResult, register_workload
from .tool_output import check_known, package_version, run_tool, tail, unreadable, whole

OPTIONS = {
    "files": "files in the pool before the transactions (set number), default 1000",
    "transactions": "transactions (set transactions), default 50000",
    "size_min": "smallest file (set size), default 500 bytes",
    "size_max": "largest file (set size), default 10000 bytes",
    "subdirs": "subdirectories the pool is spread over (set subdirectories), default 0: none",
    "read_block": "bytes per read() (set read), default 512",
    "write_block": "bytes per write() (set write), default 512",
    "read_bias": "of 10 read-or-append choices, how many are reads (set bias read), default 5",
    "create_bias": "of 10 create-or-delete choices, how many are creates (set bias create), default 5",
    "buffering": "1: stdio buffered I/O (PostMark's default), 0: unbuffered read()/write()",
    "seed": "random seed (set seed), default 42 so every run makes the same choices",
}
DEFAULTS: dict[str, Any] = {"files": 1000, "transactions": 50000, "size_min": 500, "size_max": 10000,
                            "subdirs": 0, "read_block": 512, "write_block": 512, "read_bias": 5,
                            "create_bias": 5, "buffering": 1, "seed": 42}
KIB = 1024
MIN_TIMED_S = 1  # PostMark's seconds at or below which a rate is not stored (see parse_output)
_UNITS = {"bytes": 1, "kilobytes": KIB, "megabytes": KIB ** 2, "gigabytes": KIB ** 3}
_TIME = re.compile(r"^\s*(\d+) seconds of transactions \((\d+) per second\)", re.M)
_TOTAL = re.compile(r"^\s*(\d+) seconds total", re.M)
_FILES = re.compile(r"^\s*(\d+) (created|read|appended|deleted) \((\d+) per second\)", re.M)
_DATA = re.compile(r"^\s*([0-9.]+) (bytes|kilobytes|megabytes|gigabytes) (read|written) \(", re.M)


def parse_output(text: str, transactions: int) -> tuple[dict[str, float], dict[str, str], dict[str, Any]]:
    """(metrics, notes, counts) from PostMark's verbose report. Rates are counts over
    PostMark's whole seconds: of transactions for the transaction rate, of the whole run
    for files and data (as PostMark computes them). Its seconds are differences of
    ``time()``, so each is within 1 s of the truth (a 21.4 s run was "22 seconds" here):
    a span it timed at 1 s or less could be anything under 2 s, and its rates become
    notes rather than numbers off by up to a factor of two. Raises WorkloadFailed on
    ``Error:`` lines or a missing section."""
    # "Error:" may follow a "pm>" prompt on the same line (commands read from stdin)
    errors = [line for line in text.splitlines() if "Error:" in line]
    if errors:
        raise WorkloadFailed(f"postmark reported {len(errors)} errors (it exits 0 regardless); its last lines:\n  "
                             + tail(text))
    time_match, total_match = _TIME.search(text), _TOTAL.search(text)
    files = {kind: int(count) for count, kind, _rate in _FILES.findall(text)}
    data = {way: float(value) * _UNITS[unit] for value, unit, way in _DATA.findall(text)}
    if time_match is None or total_match is None or len(files) != 4 or len(data) != 2:
        raise unreadable("postmark", "complete report (Time, Files and Data sections)", text)
    tx_s, total_s = int(time_match.group(1)), int(total_match.group(1))
    counts: dict[str, Any] = {"transactions": transactions, "transaction_s": tx_s, "total_s": total_s,
                              "files": files, "data_bytes": data}
    metrics: dict[str, float] = {}
    notes: dict[str, str] = {}
    names = {"created": "create", "read": "read", "appended": "append", "deleted": "delete"}
    rates: list[tuple[str, float, int]] = [("transactions_per_s", transactions, tx_s)]
    rates += [(f"{names[kind]}_files_per_s", count, total_s) for kind, count in files.items()]
    rates += [(f"{way.replace('written', 'write')}_bytes_per_s", value, total_s) for way, value in data.items()]
    for name, count, seconds in rates:
        if seconds <= MIN_TIMED_S:
            notes[name] = (f"too short to time: PostMark timed it at {seconds} s, in whole seconds (within 1 s); "
                           "give it more transactions")
        elif count > 0:
            metrics[name] = count / seconds
        else:
            notes[name] = "none done (PostMark's biases chose no such operation)"
    if "transactions_per_s" not in metrics and "transactions_per_s" not in notes:
        raise unreadable("postmark", "transactions", text)
    return metrics, notes, counts


def config_text(params: dict[str, Any], location: str) -> str:
    """PostMark's command file: its settings, ``run`` and ``quit``."""
    lines = [
        f"set location {location}",
        f"set number {params['files']}",
        f"set transactions {params['transactions']}",
        f"set size {params['size_min']} {params['size_max']}",
        f"set read {params['read_block']}",
        f"set write {params['write_block']}",
        f"set bias read {params['read_bias']}",
        f"set bias create {params['create_bias']}",
        f"set buffering {'true' if params['buffering'] else 'false'}",
        f"set seed {params['seed']}",
        *([f"set subdirectories {params['subdirs']}"] if params["subdirs"] else []),  # 0 is refused
        "set report verbose",
        "show",
        "run",
        "quit",
    ]
    return "\n".join(lines) + "\n"


class PostmarkWorkload(Workload):
    name = "postmark"
    capabilities = WorkloadCapabilities(traceable=True)
    tools = {"postmark": "postmark"}
    metrics = {
        "transactions_per_s": MetricKind("transactions/s", True, "transactions per second"),
        "files_per_s": MetricKind("files/s", True, "files handled per second"),
        "bytes_per_s": MetricKind("B/s", True, "throughput"),
    }
    example: dict[str, Any] = {}

    def validate(self, params: dict[str, Any]) -> dict[str, Any]:
        check_known("postmark", params, OPTIONS)
        out = {**DEFAULTS, **params}
        for key in ("size_min", "size_max", "read_block", "write_block"):
            try:
                out[key] = parse_size(out[key])
            except ValueError as exc:
                raise ParamError(key, str(exc)) from None
            whole(key, out[key], 1)
        if out["size_min"] > out["size_max"]:
            raise ParamError("size_min", f"is above size_max ({out['size_max']} bytes)")
        whole("files", out["files"], 1)
        whole("transactions", out["transactions"], 1)
        whole("subdirs", out["subdirs"], 0)
        whole("read_bias", out["read_bias"], 0, 10)
        whole("create_bias", out["create_bias"], 0, 10)
        whole("seed", out["seed"], 0)
        if out["buffering"] not in (0, 1, True, False):
            raise ParamError("buffering", f"must be 0 or 1 (given: {given_text(out['buffering'])})")
        out["buffering"] = int(out["buffering"])
        return out

    def quick(self, params: dict[str, Any]) -> dict[str, Any]:
        """Unchanged. The pool and its file sizes decide the data-to-memory ratio, and the
        run's length decides what PostMark's whole-second timer can tell: a quick preset
        run with 1/8 of the transactions gave ext4 "25000 per second" from a 1-second run
        here, a number good to a factor of two. Each PostMark run stays as long as asked."""
        return dict(params)

    def primary_metrics(self, params: dict[str, Any]) -> list[str]:
        return ["transactions_per_s", "create_files_per_s", "read_files_per_s", "append_files_per_s",
                "delete_files_per_s"]

    def tool_versions(self) -> dict[str, str | None]:
        return {"postmark": _version()}

    def data_bytes(self, params: dict[str, Any], inputs: dict[str, str] | None = None) -> int | None:
        # The pool at its mean file size; transactions keep it near that size.
        return int(params["files"] * (params["size_min"] + params["size_max"]) // 2)

    def default_timeout_s(self, params: dict[str, Any]) -> float:
        return params["transactions"] / 100 + params["files"] / 100 + 600

    def run(self, params: dict[str, Any], ctx: RunContext) -> WorkloadResult:
        # PostMark keeps paths in fixed buffers and dies (SIGSEGV) on a long location or
        # command-file path: it runs in the work directory with location "." and reads
        # its commands from stdin; the same text is kept as postmark.cfg.
        commands = config_text(params, ".")
        (ctx.artifact_dir / "postmark.cfg").write_text(commands)
        argv = ["postmark"]
        done = run_tool(argv, ctx, "postmark", ctx.timeout_s or self.default_timeout_s(params),
                        cwd=ctx.workdir, input_text=commands)
        metrics, notes, counts = parse_output(done.stdout + "\n" + done.stderr, params["transactions"])
        info = {"argv": argv, "postmark_version": _version(), "counts": counts, "time_resolution_s": 1,
                "wall_s": done.wall_s,
                "units": {"kilobyte": "1024 B", "megabyte": "1048576 B"}}
        # the process's wall time: PostMark's own whole seconds can exceed it (a sub-second run is "1 s")
        return WorkloadResult(metrics, done.wall_s, info=info, notes=notes)


@cache
def _version() -> str | None:
    """'postmark 1.53-2+b1' (the banner of Debian's build still says v1.51)."""
    return package_version("postmark")


register_workload(PostmarkWorkload())
