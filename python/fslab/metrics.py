"""Metric declarations: every metric fslab stores has one unit and one better direction,
declared here once. Names carry their unit (``iops``, ``bw_bytes_per_s``, ``clat_p99_ns``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetricKind:
    unit: str
    higher_is_better: bool
    description: str


# Keyed by the metric name's suffix, so "read_iops" and "write_iops" share one declaration.
_BY_SUFFIX: dict[str, MetricKind] = {
    "iops": MetricKind("IO/s", True, "I/O operations per second"),
    "bw_bytes_per_s": MetricKind("B/s", True, "bandwidth"),
    "lat_mean_ns": MetricKind("ns", False, "mean total latency"),
    "clat_mean_ns": MetricKind("ns", False, "mean completion latency"),
    "clat_p50_ns": MetricKind("ns", False, "median completion latency"),
    "clat_p99_ns": MetricKind("ns", False, "99th percentile completion latency"),
    "clat_p99_9_ns": MetricKind("ns", False, "99.9th percentile completion latency"),
    "io_bytes": MetricKind("B", True, "bytes transferred"),
    "runtime_ms": MetricKind("ms", False, "time the workload ran"),
    "sync_lat_mean_ns": MetricKind("ns", False, "mean fsync latency"),
    "sync_lat_p99_ns": MetricKind("ns", False, "99th percentile fsync latency"),
    "wall_s": MetricKind("s", False, "wall time"),
    "overhead_s": MetricKind("s", False, "time spent outside the workload"),
    "requests_count": MetricKind("requests", False, "requests completed by the device"),
    "sectors_count": MetricKind("sectors", False, "512-byte sectors moved by the device"),
    "cpu_user_pct": MetricKind("%", False, "user CPU"),
    "cpu_sys_pct": MetricKind("%", False, "system CPU"),
    "bytes_per_s": MetricKind("B/s", True, "throughput"),
    "per_s": MetricKind("ops/s", True, "operations per second"),
    "cpu_pct": MetricKind("%", False, "CPU used"),
    "latency_ns": MetricKind("ns", False, "latency"),
    # block-layer trace metrics (fslab.analysis.traces.summary_metrics)
    "size_mean_bytes": MetricKind("B", True, "mean request size on the device"),
    "size_median_bytes": MetricKind("B", True, "median request size on the device"),
    "size_min_bytes": MetricKind("B", True, "smallest request size on the device"),
    "size_max_bytes": MetricKind("B", True, "largest request size on the device"),
    "sequential_fraction": MetricKind("fraction", True, "share of requests starting where the previous one ended"),
    "latency_mean_us": MetricKind("µs", False, "mean issue-to-complete latency"),
    "latency_p99_us": MetricKind("µs", False, "99th percentile issue-to-complete latency"),
    "lost_events_count": MetricKind("events", False, "trace events the kernel dropped (0 = complete trace)"),
    "write_amplification_ratio": MetricKind("B/B", False, "bytes written to the device per byte the workload wrote"),
    "max_latency_ns": MetricKind("ns", False, "longest latency of one operation (Bonnie++'s latency)"),
    # device-model predictions (fslab.predictions: pred_<model>_<suffix>), never measured
    "latency_mean_ns": MetricKind("ns", False, "mean request latency"),
    "latency_p50_ns": MetricKind("ns", False, "median request latency"),
    "latency_p99_ns": MetricKind("ns", False, "99th percentile request latency"),
    "latency_max_ns": MetricKind("ns", False, "longest request latency"),
}


def kind_of(name: str) -> MetricKind:
    """The declaration of a metric, found by the longest matching suffix of its name."""
    for suffix in sorted(_BY_SUFFIX, key=len, reverse=True):
        if name == suffix or name.endswith("_" + suffix):
            return _BY_SUFFIX[suffix]
    raise KeyError(f"metric {name!r} has no declared unit; add its suffix to fslab.metrics")


def unit_of(name: str) -> str:
    return kind_of(name).unit
