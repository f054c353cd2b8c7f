"""alloc: the block-allocation micro-benchmark of seed 003 — one 4 KiB block read
(sequential, random), one file delete, one block allocated and written (sequential
append, random hole) — each operation timed on its own, ``count`` times (default 1000).

The timing loop is in fslab's Rust core (``fslab._core.alloc_run``): a Python loop
around each system call would add microseconds of its own. The ``null`` operation times
an empty operation through the same loop; its latencies (``null_lat_*``) are the floor
under every other number. Writes are buffered with an fsync per operation inside the
timed span (``sync = "fsync"``, the default), O_DIRECT (``"direct"``, reads too), or
buffered only (``"none"``). Files are laid out in ``prepare`` (the read file of ``count``
blocks, ``count`` delete victims of 1..16 blocks), before caches are dropped.

Metrics per operation: ``<op>_lat_mean_ns``, ``_lat_p50_ns``, ``_lat_p99_ns`` and
``<op>_samples_count``; after the run, the fragments of the two written files
(``seq_write_fragments_count``, ``rand_write_fragments_count``, by FIEMAP).
"""

from __future__ import annotations

import time
from typing import Any

from ..metrics import MetricKind
from ..pagecache import drop_caches, sync_filesystem
from ..units import given_text, parse_size
from . import ParamError, RunContext, Workload, WorkloadCapabilities, WorkloadResult, register_workload

OPS = ("seq_read", "rand_read", "delete", "seq_write", "rand_write")
SYNC_MODES = ("fsync", "direct", "none")
READS = ("seq_read", "rand_read")
DEFAULTS: dict[str, Any] = {"ops": list(OPS), "count": 1000, "bs": 4096, "sync": "fsync", "seed": 0,
                            "delete_max_blocks": 16}
QUICK_COUNT = 100
WRITTEN_FILES = {"seq_write": "alloc-seq.dat", "rand_write": "alloc-rand.dat"}


def latency_metrics(op: str, latencies_ns: list[int]) -> dict[str, float]:
    """Mean, median and 99th percentile in ns, and n. Percentiles are fslab's one
    definition, the nearest rank (as the Rust core's stats.rs and analysis.traces). Plain
    Python, not numpy: in a guest under emulation, importing numpy costs a run ~5 s."""
    ordered = sorted(latencies_ns)
    n = len(ordered)
    return {
        f"{op}_lat_mean_ns": sum(ordered) / n,
        f"{op}_lat_p50_ns": float(ordered[nearest_rank(n, 50) - 1]),
        f"{op}_lat_p99_ns": float(ordered[nearest_rank(n, 99) - 1]),
        f"{op}_samples_count": float(n),
    }


def nearest_rank(n: int, percent: int) -> int:
    """The 1-based rank of the ``percent``-th percentile of n > 0 values: ceil(percent/100 *
    n), at least 1, in integers (no rounding of percent/100 * n)."""
    return max(1, -(-percent * n // 100))


METRICS: dict[str, MetricKind] = {
    "lat_mean_ns": MetricKind("ns", False, "mean total latency"),
    "lat_p50_ns": MetricKind("ns", False, "median latency of one operation"),
    "lat_p99_ns": MetricKind("ns", False, "99th percentile latency of one operation"),
    "samples_count": MetricKind("operations", True, "operations timed"),
    "fragments_count": MetricKind("fragments", False, "physically contiguous runs of a file (FIEMAP)"),
}


class AllocWorkload(Workload):
    name = "alloc"
    # The executor records free-space fragmentation before and after each run.
    capabilities = WorkloadCapabilities(traceable=True, free_space_facts=True, phases=True)
    tools: dict[str, str] = {}  # no external tool: the loop is fslab's own
    metrics = METRICS
    example: dict[str, Any] = {"count": 10}

    def validate(self, params: dict[str, Any]) -> dict[str, Any]:
        for key in params:
            if key not in DEFAULTS:
                raise ParamError(key, f"is not an alloc parameter; known: {', '.join(sorted(DEFAULTS))}")
        out = {**DEFAULTS, **params}
        ops = out["ops"]
        if isinstance(ops, str):
            ops = [ops]
        if not isinstance(ops, list) or not ops:
            raise ParamError("ops", f"must be a list of operations from: {', '.join(OPS)}")
        for op in ops:
            if op not in OPS:
                raise ParamError("ops", f"{given_text(op)} is not an alloc operation; allowed: {', '.join(OPS)}")
        out["ops"] = [op for op in OPS if op in ops]  # fixed order: reads before deletes
        try:
            out["bs"] = parse_size(out["bs"])
        except ValueError as exc:
            raise ParamError("bs", str(exc)) from None
        if out["bs"] < 512 or out["bs"] % 512:
            raise ParamError("bs", f"must be a multiple of 512 bytes (given: {out['bs']})")
        if out["sync"] not in SYNC_MODES:
            raise ParamError("sync", f"{given_text(out['sync'])} is not a sync mode; allowed: {', '.join(SYNC_MODES)}")
        for key, low in (("count", 1), ("seed", 0), ("delete_max_blocks", 1)):
            value = out[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ParamError(key, f"must be a whole number >= {low} (given: {given_text(value)})")
        if out["count"] > 10_000_000:
            raise ParamError("count", "is above 10,000,000 operations; lower it")
        return out

    def quick(self, params: dict[str, Any]) -> dict[str, Any]:
        return {**params, "count": min(params["count"], QUICK_COUNT)}

    def primary_metrics(self, params: dict[str, Any]) -> list[str]:
        # Allocation+write first: seed 003's subject (its Figures 8 and 9).
        first = ("seq_write", "rand_write", "delete", "seq_read", "rand_read")
        return [f"{op}_lat_mean_ns" for op in first if op in params["ops"]]

    def tool_versions(self) -> dict[str, str | None]:
        from .. import _core

        return {"fslab-core": _core.core_version()}

    def default_timeout_s(self, params: dict[str, Any]) -> float:
        # 50 ms per operation is far slower than any device fslab runs on.
        return 0.05 * params["count"] * (len(params["ops"]) + 1) + 300

    def _args(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"count": params["count"], "block": params["bs"], "sync": params["sync"],
                "seed": params["seed"], "delete_max_blocks": params["delete_max_blocks"]}

    def prepare(self, params: dict[str, Any], ctx: RunContext) -> bool:
        from .. import _core

        _core.alloc_prepare(str(ctx.workdir), params["ops"], **self._args(params))
        return True

    def run(self, params: dict[str, Any], ctx: RunContext) -> WorkloadResult:
        from .. import _core
        from ..fragmentation import NoFiemap, file_extents, layout_of, unavailable_note

        metrics: dict[str, float] = {}
        started = time.monotonic()
        for op in ["null", *params["ops"]]:
            if op in READS:  # each read from the device: the blocks another op read are cached
                drop_caches()
            latencies = _core.alloc_run(str(ctx.workdir), op, **self._args(params))
            metrics.update(latency_metrics(op, latencies))
        runtime = time.monotonic() - started
        sync_filesystem(ctx.workdir)
        info: dict[str, Any] = {"alloc": {k: params[k] for k in ("ops", "count", "bs", "sync", "seed")},
                                "timing": "Rust core loop, CLOCK_MONOTONIC per operation; null_* is its floor",
                                "reads": "the page cache is dropped before each read operation; random reads "
                                         "read every block once, without readahead"}
        for op, name in WRITTEN_FILES.items():
            if op in params["ops"]:
                try:
                    lay = layout_of(file_extents(ctx.workdir / name), params["bs"])
                except NoFiemap:  # ntfs-3g: no fragment count, and the run says why
                    info["fragments"] = unavailable_note(ctx.workdir)
                    continue
                metrics[f"{op}_fragments_count"] = float(lay.fragments)
        return WorkloadResult(metrics, runtime, info)


register_workload(AllocWorkload())
