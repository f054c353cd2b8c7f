"""Predictions for a study's traced runs (``simulate = [...]`` in ``[study]``): each run's
block trace is replayed on each named device model and the result stored as run metrics
``pred_<model>_<metric>`` — predictions, never measurements, and labelled so everywhere.

Replay mode: **closed loop** at the workload's queue depth (fio ``iodepth`` x ``numjobs``,
mobibench ``threads``; 1 when none is given). Open loop would issue requests at the times
the trace recorded, and those times come from a RAM-speed loop device: on a slower model
requests then arrive faster than it serves them, the queue grows for the whole trace and
the latency measures the trace's length, not the device (a 3,000-request trace on
hdd-7200: p99 2.2 s open loop vs 33 ms closed loop). Closed loop keeps the file system's
request sequence (sizes, offsets, flushes, order) and asks how fast the model serves it.
Buffered writeback can have more requests in flight than the application's depth, so for
such workloads the prediction is conservative (less queueing for the model to reorder).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .errors import FslabError, SpecError
from .job.record import Metric
from .metrics import MetricKind, declare_metrics

PREFIX = "pred_"
# Stored per model: metric suffix -> how to take it from simulate_requests' result.
SUFFIXES = ("requests_count", "iops", "bw_bytes_per_s", "latency_mean_ns", "latency_p50_ns",
            "latency_p99_ns", "latency_max_ns", "write_amplification_ratio")
# Stored only where the model has them (SSD: steady-state WA; HDD: write-cache share).
OPTIONAL_SUFFIXES = ("write_amplification_steady_ratio", "write_cache_absorbed_fraction")
# A prediction whose written bytes were this much acknowledged by a write cache measures
# the cache, not the device: say so wherever it is shown.
CACHE_WARNING_FRACTION = 0.9


def assumptions(facts: Mapping[str, float]) -> str:
    """The settings a prediction rests on, in words (from the core's ``model_facts``)."""
    parts = []
    if "write_cache" in facts:
        size = int(facts.get("cache_bytes", 0)) >> 20
        parts.append(f"write cache {'on' if facts['write_cache'] else 'off'}, {size} MiB")
    if "over_provisioning_simulated" in facts:
        parts.append(f"over-provisioning {facts['over_provisioning_simulated']:.3f} simulated "
                     f"({facts['over_provisioning_requested']:.3f} asked, whole blocks per plane; "
                     f"{facts['over_provisioning_usable']:.3f} usable after GC reserves)")
    return "; ".join(parts)


def cache_warning(model: str, absorbed: float | None, facts: Mapping[str, float] | None = None) -> str | None:
    """A warning when the write cache took (nearly) every written byte, else None."""
    if absorbed is None or absorbed < CACHE_WARNING_FRACTION:
        return None
    size = f" ({int(facts['cache_bytes']) >> 20} MiB)" if facts and "cache_bytes" in facts else ""
    return (f"{model}: the write cache{size} acknowledged {absorbed:.0%} of the written bytes; the figures "
            "measure the cache, not the disk (a longer trace, or write_cache=0, shows the disk)")

declare_metrics("device-model predictions", {
    "requests_count": MetricKind("requests", False, "requests completed by the device"),
    "iops": MetricKind("IOPS", True, "I/O operations per second"),
    "bw_bytes_per_s": MetricKind("B/s", True, "bandwidth"),
    "latency_mean_ns": MetricKind("ns", False, "mean request latency"),
    "latency_p50_ns": MetricKind("ns", False, "median request latency"),
    "latency_p99_ns": MetricKind("ns", False, "99th percentile request latency"),
    "latency_max_ns": MetricKind("ns", False, "longest request latency"),
    "write_amplification_ratio": MetricKind("B/B", False, "bytes written to the device per byte the workload wrote"),
    "write_amplification_steady_ratio": MetricKind("B/B", False,
                                                   "write amplification over the second half of the writes"),
    "write_cache_absorbed_fraction": MetricKind("fraction", False,
                                                "share of written bytes a disk's write cache acknowledged"),
})


def validate_simulate(spec: Any, source: str) -> None:
    """``study.simulate`` names known models and comes with ``trace = true``.
    Raises SpecError naming ``study.simulate[i]`` and listing the models."""
    names = list(spec.study.simulate)
    if not names:
        return
    if not spec.study.trace:
        raise SpecError("needs trace = true: the models replay each run's block trace "
                        f"(simulate = {names}, trace = false)", source=source, field="study.simulate")
    from .simulate import model_names, model_params

    for i, name in enumerate(names):
        try:
            model_params(name)
        except SpecError:
            raise SpecError(f"unknown device model {name!r}; known: {', '.join(model_names())} "
                            "(or raid0-Nx-MODEL / raid5-Nx-MODEL)", source=source,
                            field=f"study.simulate[{i}]") from None
        if names.index(name) != i:
            raise SpecError(f"{name!r} is named twice", source=source, field=f"study.simulate[{i}]")


def replay_queue_depth(params: Mapping[str, Any]) -> int:
    """Requests the workload keeps outstanding: iodepth x (numjobs or threads), at least 1."""
    depth = int(params.get("iodepth", 1) or 1)
    jobs = int(params.get("numjobs", params.get("threads", 1)) or 1)
    return max(1, depth) * max(1, jobs)


def metric_name(model: str, suffix: str) -> str:
    return f"{PREFIX}{model}_{suffix}"


def split_name(name: str) -> tuple[str, str] | None:
    """(model, suffix) of a prediction metric name, None for any other metric."""
    if not name.startswith(PREFIX):
        return None
    for suffix in SUFFIXES + OPTIONAL_SUFFIXES:
        if name.endswith("_" + suffix):
            return name[len(PREFIX):-len(suffix) - 1], suffix
    return None


def _values(result: dict[str, Any]) -> dict[str, float | None]:
    lat = result["latency_us"]
    facts = result.get("model_facts", {})
    # latency_us from the core -> integer-ish nanoseconds, the unit fslab stores latency in
    return {
        "requests_count": result["requests"], "iops": result["iops"],
        "bw_bytes_per_s": result["mb_per_s"] * 1e6,
        "latency_mean_ns": None if lat["mean"] is None else lat["mean"] * 1000,
        "latency_p50_ns": None if lat["p50"] is None else lat["p50"] * 1000,
        "latency_p99_ns": None if lat["p99"] is None else lat["p99"] * 1000,
        "latency_max_ns": None if lat["max"] is None else lat["max"] * 1000,
        "write_amplification_ratio": result.get("write_amplification"),
        "write_amplification_steady_ratio": facts.get("write_amplification_steady"),
        "write_cache_absorbed_fraction": facts.get("write_cache_absorbed_fraction"),
    }


def predict_run(trace_path: Path, models: Sequence[str], params: Mapping[str, Any],
                trace_result: Mapping[str, Any] | None = None) -> tuple[list[Metric], dict[str, Any]]:
    """Replay one run's trace on each model. Returns (metrics, provenance). Every metric's
    note says it is a prediction (and repeats the trace's INCOMPLETE mark when events were
    lost, from ``trace_result`` = ``analysis.traces.analyze``'s dict). A model that rejects
    the trace (e.g. it addresses more than the model's capacity) gives metrics without a
    number whose note says why: predictions never cost the measured run."""
    from .simulate import read_requests, simulate_requests

    qd = replay_queue_depth(params)
    trace_note = None
    if trace_result is not None and not trace_result.get("complete", True):
        trace_note = f"incomplete trace: {trace_result.get('lost_events')} events lost"
    prov: dict[str, Any] = {"mode": "closed-loop", "qd": qd, "models": {}}
    metrics: list[Metric] = []
    try:
        requests = read_requests(trace_path)
        prov["requests"] = len(requests)
    except FslabError as exc:
        requests, prov["error"] = None, str(exc)
    for model in models:
        label = f"predicted on model {model} (closed loop, qd {qd}), not measured"
        if trace_note:
            label += f"; {trace_note}"
        try:
            if requests is None:
                raise FslabError(prov["error"])
            result = simulate_requests(requests, model, qd=qd, open_loop=False)
        except FslabError as exc:
            for suffix in SUFFIXES:
                name = metric_name(model, suffix)
                metrics.append(Metric.of(name, None, f"{label}: failed: {exc}"))
            prov["models"][model] = {"error": str(exc)}
            continue
        facts = result.get("model_facts", {})
        noted = label + (f"; assumes {assumptions(facts)}" if assumptions(facts) else "")
        warning = cache_warning(model, facts.get("write_cache_absorbed_fraction"), facts)
        if warning:
            noted += f"; {warning}"
        for suffix, value in _values(result).items():
            if value is None and suffix in OPTIONAL_SUFFIXES:
                continue
            name = metric_name(model, suffix)
            metrics.append(Metric.of(name, value, noted))
        prov["models"][model] = {"elapsed_ns": result["elapsed_ns"],
                                 "replay_wall_ns": result.get("replay_wall_ns"), "facts": facts}
    return metrics, prov
