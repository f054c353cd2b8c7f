"""The metrics a traced run reports, declared once (unit, better direction, meaning), low
enough that the study check, the store and the report can know them without loading the
tracing code (``fslab.job.tracing`` produces them)."""

from __future__ import annotations

from .metrics import MetricKind, declare_metrics

# Metrics of a traced run (fslab.analysis.traces.summary_metrics).
declare_metrics("block trace", {
    "size_mean_bytes": MetricKind("B", True, "mean request size on the device"),
    "size_median_bytes": MetricKind("B", True, "median request size on the device"),
    "size_min_bytes": MetricKind("B", True, "smallest request size on the device"),
    "size_max_bytes": MetricKind("B", True, "largest request size on the device"),
    "sequential_fraction": MetricKind("fraction", True, "share of requests starting where the previous one ended"),
    "latency_mean_ns": MetricKind("ns", False, "mean issue-to-complete latency"),
    "latency_p99_ns": MetricKind("ns", False, "99th percentile issue-to-complete latency"),
    "lost_events_count": MetricKind("events", False, "trace events the kernel dropped (0 = complete trace)"),
    "write_amplification_ratio": MetricKind("B/B", False, "bytes written to the device per byte the workload wrote"),
    "requests_count": MetricKind("requests", False, "requests completed by the device", ranked=False),
    "reader_cpu_during_run_ns": MetricKind("ns", False,
                                           "CPU time the trace reader took while the workload ran", ranked=False),
    "events_count": MetricKind("events", False, "trace events recorded", ranked=False),
})
