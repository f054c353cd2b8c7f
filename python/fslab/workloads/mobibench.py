"""mobibench: MobiBench's file-I/O test as the seed-004 paper ran it — 4 KiB random
writes into one large file, buffered, with MobiBench's sync modes — run as a generated
fio job (fio does the I/O and the measuring; this module only fixes the pattern).

Sync modes: ``none`` (buffered, no syncing), ``fsync`` / ``fdatasync`` (after every
``sync_every`` writes), ``osync`` (file opened O_SYNC), ``direct`` (O_DIRECT).
The job ends with an fsync so buffered data reaches the device within the run (and
its trace). The file is laid out before the measured phase (``prepare``; MobiBench also
writes its file first), so neither the device counters nor the trace include the layout.
"""

from __future__ import annotations

from typing import Any

from ..units import given_text, parse_duration_s, parse_size
from . import ParamError, RunContext, Workload, WorkloadCapabilities, WorkloadResult, quick_size, register_workload
from .fio import METRICS, FioWorkload, headline_rates

SYNC_MODES = ("none", "fsync", "fdatasync", "osync", "direct")
DEFAULTS: dict[str, Any] = {"file_size": 1 << 30, "bs": 4096, "sync": "none", "sync_every": 1,
                            "threads": 1}
FILE_NAME = "mobibench.dat"


class MobibenchWorkload(Workload):
    name = "mobibench"
    capabilities = WorkloadCapabilities(traceable=True)
    tools = {"fio": "fio"}
    metrics = METRICS  # it is a fio job
    example: dict[str, Any] = {}

    def __init__(self) -> None:
        self._fio = FioWorkload()

    def validate(self, params: dict[str, Any]) -> dict[str, Any]:
        known = set(DEFAULTS) | {"io_size", "runtime"}
        for key in params:
            if key not in known:
                raise ParamError(key, f"is not a mobibench parameter; known: {', '.join(sorted(known))}")
        out = {**DEFAULTS, **params}
        for key, parse in (("file_size", parse_size), ("bs", parse_size), ("io_size", parse_size),
                           ("runtime", lambda v: int(parse_duration_s(v)))):
            if key in out:
                try:
                    out[key] = parse(out[key])
                except ValueError as exc:
                    raise ParamError(key, str(exc)) from None
        if out["sync"] not in SYNC_MODES:
            raise ParamError("sync", f"{given_text(out['sync'])} is not a sync mode; allowed: {', '.join(SYNC_MODES)}")
        for key in ("sync_every", "threads"):
            if isinstance(out[key], bool) or not isinstance(out[key], int) or out[key] < 1:
                raise ParamError(key, f"must be a whole number >= 1 (given: {given_text(out[key])})")
        if out["bs"] <= 0 or out["bs"] % 512 or out["bs"] > out["file_size"]:
            raise ParamError("bs", "must be a positive multiple of 512 bytes and at most file_size")
        return out

    def quick(self, params: dict[str, Any]) -> dict[str, Any]:
        out = dict(params)
        out["file_size"] = quick_size(out["file_size"])
        if "io_size" in out:
            out["io_size"] = min(quick_size(out["io_size"]), out["file_size"])
        if "runtime" in out:
            out["runtime"] = min(out["runtime"], 3)
        return out

    def primary_metrics(self, params: dict[str, Any]) -> list[str]:
        return ["write_iops", "write_bw_bytes_per_s"]

    def work_rates(self, params: dict[str, Any], metrics: dict[str, float]) -> list[str]:
        return headline_rates(metrics)

    def queue_depth(self, params: dict[str, Any]) -> int:
        return max(1, int(params.get("threads", 1) or 1))  # one synchronous write per thread

    def tool_versions(self) -> dict[str, str | None]:
        return self._fio.tool_versions()

    def fio_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """The fio job this pattern is: one file, random 4 KiB writes, one sync mode."""
        job: dict[str, Any] = {
            "rw": "randwrite", "bs": params["bs"], "size": params["file_size"],
            "filename": FILE_NAME, "ioengine": "psync", "numjobs": params["threads"],
            # end_fsync: the written data reaches the device (and the trace) within the run
            "randrepeat": 0, "end_fsync": 1,
        }
        if "io_size" in params:
            job["io_size"] = params["io_size"]
        if "runtime" in params:
            job["runtime"] = params["runtime"]
            job["time_based"] = 1
        mode = params["sync"]
        if mode in ("fsync", "fdatasync"):
            job[mode] = params["sync_every"]
        elif mode == "osync":
            job["sync"] = 1
        elif mode == "direct":
            job["direct"] = 1
        return job

    def data_bytes(self, params: dict[str, Any], inputs: dict[str, str] | None = None) -> int | None:
        return self._fio.data_bytes(self.fio_params(params))

    def default_timeout_s(self, params: dict[str, Any]) -> float:
        return self._fio.default_timeout_s(self.fio_params(params))

    def prepare(self, params: dict[str, Any], ctx: RunContext) -> bool:
        return self._fio.prepare(self.fio_params(params), ctx)

    def run(self, params: dict[str, Any], ctx: RunContext) -> WorkloadResult:
        result = self._fio.run(self.fio_params(params), ctx)
        result.info["mobibench"] = {"sync": params["sync"], "sync_every": params["sync_every"],
                                    "file_size": params["file_size"], "bs": params["bs"]}
        return result


register_workload(MobibenchWorkload())
