"""Predictions for a study's traced runs (``simulate = [...]`` in ``[study]``): each run's
block trace is replayed on each named device model and the result stored as run metrics
``pred_<model>_<metric>`` — predictions, never measurements, and labelled so everywhere.

Two kinds, never confused:
- **the workload's own metrics** (``pred_<model>_write_iops``, ``pred_<model>_bw_bytes_per_s``):
  the work the run did (its I/Os and bytes, from its measured rate over its own runtime)
  over the time the model needs for every request the file system issued for that work.
  That answers the workload's question: a file system that turns 4 KiB random writes into
  a few large sequential requests finishes its work sooner on the model, even though the
  model serves fewer requests per second. Only metrics a workload names as the rate of
  its work are predicted (``Workload.work_rates``): fio and mobibench headline rates; not
  Bonnie++'s tests (they run one after another in one trace) nor fio groups.
- **the device's figures** (``pred_<model>_device_requests_per_s``, ``device_bw_bytes_per_s``,
  ``device_latency_*_ns``, ``device_requests_count``): requests as the model served them.
  Among them, where the model's time went: ``pred_<model>_time_<mechanism>_share``
  (``fslab.mechanisms``). Results stored before these were named so say
  ``pred_<model>_iops`` etc.; the store reads them under today's names
  (``fslab.store_compat``).

Which models a run was replayed on is its provenance's ``predictions.models`` (model ->
what its replay recorded, ``time_by_mechanism_ns`` among it): readers take the models and
mechanisms from there and build metric names with ``metric_name``; nothing parses a
model back out of a metric's name.

Replay mode: **closed loop** at the concurrency the trace shows (the time-weighted mean
number of requests in flight between issue and completion, per device of the trace),
and at least the workload's queue depth (fio ``iodepth`` x ``numjobs``, mobibench
``threads``; 1 when none is given). Open loop would issue requests at the times
the trace recorded, and those times come from a RAM-speed loop device: on a slower model
requests then arrive faster than it serves them, the queue grows for the whole trace and
the latency measures the trace's length, not the device (a 3,000-request trace on
hdd-7200: p99 2.2 s open loop vs 33 ms closed loop). Closed loop keeps the file system's
request sequence (sizes, offsets, flushes, order) and asks how fast the model serves it.
Buffered writeback can have more requests in flight than the application's depth, so for
such workloads the prediction is conservative (less queueing for the model to reorder).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import FslabError, SimulationError, SpecError
from .jobdata.record import Metric
from .mechanisms import metric_suffix, shares, whole_of
from .metrics import MetricKind, declare_metrics
from .units import value_text

if TYPE_CHECKING:
    from .simulate import Requests
    from .trace.formats import Trace

PREFIX = "pred_"
MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]*")
# Stored per model: the device's figures (suffix -> how to take it from simulate_requests' result).
SUFFIXES = ("device_requests_count", "device_requests_per_s", "device_bw_bytes_per_s", "device_latency_mean_ns",
            "device_latency_p50_ns", "device_latency_p99_ns", "device_latency_max_ns", "write_amplification_ratio")
# Stored only where the model has them (SSD: steady-state WA; HDD: write-cache share).
OPTIONAL_SUFFIXES = ("write_amplification_steady_ratio", "write_cache_absorbed_fraction")
# A prediction whose written bytes were this much acknowledged by a write cache measures
# the cache, not the device: say so wherever it is shown.
CACHE_WARNING_FRACTION = 0.9


def resolve_model(name: str, definitions: Mapping[str, Mapping[str, Any]] | None) -> tuple[str, dict[str, Any]]:
    """(shipped model, parameter overrides) for a model name: a study's own model is its
    base with its overrides; a shipped one is itself."""
    definition = (definitions or {}).get(name)
    if definition is None:
        return name, {}
    return str(definition["base"]), {k: v for k, v in definition.items() if k not in ("base", "description")}


def assumptions(facts: Mapping[str, float]) -> str:
    """The settings a prediction rests on, in words (from the core's ``model_facts``)."""
    parts = []
    if "controller_cache_bytes" in facts:
        cache = int(facts["controller_cache_bytes"])
        parts.append(f"a RAID controller write-back cache of {cache >> 20} MiB" if cache
                     else "no RAID controller cache (every write goes to the members, as md does)")
    if "write_cache" in facts:
        size = int(facts.get("cache_bytes", 0)) >> 20
        parts.append(f"write cache on, {size} MiB" if facts["write_cache"] else "write cache off")
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
    # one decimal: 0.996 is not "100%" beside the table's 0.996
    return (f"{model}: the write cache{size} acknowledged {absorbed:.1%} of the written bytes; the figures "
            "measure the cache, not the disk (a longer trace, or write_cache=0, shows the disk)")

declare_metrics("device-model predictions", {
    "requests_count": MetricKind("requests", False, "requests completed by the device", ranked=False),
    "requests_per_s": MetricKind("requests/s", True, "requests the device completed per second"),
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
    """``study.simulate`` and each entry's ``simulate`` name known models (shipped or the
    study's ``[models.NAME]``), once each, and come with ``trace = true``; each study model
    makes a model. Raises SpecError naming the field and listing the models."""
    lists = [("study.simulate", list(spec.study.simulate))]
    lists += [(f"filesystems.{name}.simulate", list(fs.simulate)) for name, fs in spec.filesystems.items()
              if fs.simulate is not None]
    from .simulate import model_capacity, model_names, model_params

    for name, definition in spec.models.items():
        field = f"models.{name}"
        if not MODEL_NAME.fullmatch(name):
            raise SpecError("a model's name takes letters, digits, '-' and '.' (no '_': it ends the model's "
                            "part of pred_<model>_<metric>)", source=source, field=field)
        if name in model_names():
            raise SpecError(f"{name!r} is a shipped model's name: give the study's own model another",
                            source=source, field=field)
        try:
            model_capacity(model_params(definition.base, definition.overrides))
        except SpecError as exc:
            known = ", ".join(model_names())
            why = (f"unknown base model {definition.base!r}; known: {known} (or raid0-Nx-MODEL / "
                   "raid5-Nx-MODEL)") if exc.field == "--model" else str(exc)
            raise SpecError(why, source=source, field=field) from None
        except SimulationError as exc:
            raise SpecError(f"{exc} (base {definition.base!r})", source=source, field=field) from None
    for field, names in lists:
        if names and not spec.study.trace:
            raise SpecError(f"needs trace = true: the models replay each run's block trace "
                            f"(simulate = {value_text(names)}, trace = false)", source=source, field=field)
        for i, name in enumerate(names):
            if name in spec.models:
                continue
            try:
                model_params(name)
            except SpecError:
                raise SpecError(f"unknown device model {name!r}; known: {', '.join(model_names())} "
                                "(or raid0-Nx-MODEL / raid5-Nx-MODEL), or one of the study's "
                                "[models.NAME]", source=source, field=f"{field}[{i}]") from None
            if names.index(name) != i:
                raise SpecError(f"{name!r} is named twice", source=source, field=f"{field}[{i}]")


def metric_name(model: str, suffix: str) -> str:
    return f"{PREFIX}{model}_{suffix}"


def _values(result: dict[str, Any]) -> dict[str, float | None]:
    lat = result["latency_ns"]
    facts = result.get("model_facts", {})
    return {
        "device_requests_count": result["requests"], "device_requests_per_s": result["iops"],
        "device_bw_bytes_per_s": result["mb_per_s"] * 1e6,
        "device_latency_mean_ns": lat["mean"], "device_latency_p50_ns": lat["p50"],
        "device_latency_p99_ns": lat["p99"], "device_latency_max_ns": lat["max"],
        "write_amplification_ratio": result.get("write_amplification"),
        "write_amplification_steady_ratio": facts.get("write_amplification_steady"),
        "write_cache_absorbed_fraction": facts.get("write_cache_absorbed_fraction"),
    }


def window_concurrency(trace: Trace, spans: Sequence[tuple[int, int]] | None = None) -> list[float | None]:
    """The requests in flight between issue and completion that the trace shows: their
    time-weighted mean over the time any was in flight, per device of the trace (an md
    array's members each have their own queue; the array's own bios have no completion
    event here) — within each span ((start, end) in ns on the trace's clock), or the
    whole trace when ``spans`` is None. None where no request completed."""
    import numpy as np

    from .trace.formats import EV_COMPLETE, EV_ISSUE

    c = trace.columns
    issue, done = c["event"] == EV_ISSUE, c["event"] == EV_COMPLETE
    keep = issue | done
    times = np.asarray(c["time_ns"][keep], dtype=np.int64)
    step = np.where(issue[keep], 1, -1)
    order = np.argsort(times, kind="stable")
    times, step = times[order], step[order]
    devices = max(1, len(np.unique(c["dev"][issue])))
    if spans is None:
        spans = [(int(times[0]), int(times[-1]) + 1) if len(times) else (0, 0)]
    out: list[float | None] = []
    for span in spans:
        lo, hi = np.searchsorted(times, [int(span[0]), int(span[1])], side="left")
        t, s = times[lo:hi], step[lo:hi]
        if len(t) < 2 or not (s < 0).any():
            out.append(None)
            continue
        in_flight = np.maximum(np.cumsum(s), 0)  # a completion of a request issued before the span
        spans_ns = np.diff(t)
        busy = in_flight[:-1] > 0
        total = spans_ns[busy].sum()
        out.append(float((in_flight[:-1][busy] * spans_ns[busy]).sum() / total) / devices if total else None)
    return out


def read_run_trace(trace_path: Path) -> tuple[Trace, Requests]:
    """A run's trace, read once, and its requests as the models take them. Raises
    FslabError (or OSError) when it cannot be read."""
    from .simulate import requests_from_trace
    from .trace.formats import read_parquet

    trace = read_parquet(trace_path)
    return trace, requests_from_trace(trace)


def replay_depth(app_qd: int, concurrency: float | None) -> int:
    """Closed-loop depth: the depth the trace sustained (its mean concurrency, rounded
    down: a queue-depth-1 job beside a little background writeback shows 1.3-1.6, which is
    not a second request in flight of its own), at least the workload's own ``app_qd``."""
    return app_qd if concurrency is None else max(app_qd, int(concurrency))


def predict_run(trace_path: Path, models: Sequence[str], queue_depth: int,
                trace_result: Mapping[str, Any] | None = None, work_rates: Mapping[str, float] | None = None,
                work_s: float | None = None,
                definitions: Mapping[str, Mapping[str, Any]] | None = None,
                loaded: tuple[Trace, Requests] | None = None) -> tuple[list[Metric], dict[str, Any]]:
    """Replay one run's trace on each model (``loaded``: the trace as ``read_run_trace``
    read it, so a caller that needs it twice reads it once; ``queue_depth``: the workload's own,
    ``Workload.queue_depth``, the least it is replayed at). Returns (metrics, provenance): the device's
    figures (``pred_<model>_device_*``) and, for each of ``work_rates`` (the workload's
    metrics that are the rate of its work over ``work_s`` seconds, its own runtime), the
    same work over the model's time for the trace's requests. Every metric's note says it
    is a prediction and what it assumes (and repeats the trace's INCOMPLETE mark when
    events were lost, from ``trace_result`` = ``analysis.traces.analyze``'s dict). A
    model that rejects the trace (e.g. it addresses more than the model's capacity) gives
    metrics without a number whose note says why: predictions never cost the measured run.
    ``definitions``: the study's own models (name -> {"base": shipped model, overrides})."""
    from .simulate import simulate_requests

    try:
        trace, requests = loaded or read_run_trace(trace_path)
        concurrency, error = window_concurrency(trace)[0], None
    except (FslabError, OSError, ValueError, KeyError) as exc:
        requests, concurrency, error = None, None, str(exc)
    qd = replay_depth(queue_depth, concurrency)
    trace_note = None
    if trace_result is not None and not trace_result.get("complete", True):
        trace_note = f"incomplete trace: {trace_result.get('lost_events')} events lost"
    prov: dict[str, Any] = {"mode": "closed-loop", "qd": qd, "qd_workload": queue_depth,
                            "trace_concurrency": concurrency, "models": {}}
    rates = {name: v for name, v in (work_rates or {}).items() if v is not None and work_s}
    metrics: list[Metric] = []
    if requests is not None:
        prov["requests"] = len(requests)
    else:
        prov["error"] = error
    for model in models:
        label = f"predicted on model {model} (closed loop, qd {qd}), not measured"
        if trace_note:
            label += f"; {trace_note}"
        try:
            if requests is None:
                raise FslabError(prov["error"])
            base, overrides = resolve_model(model, definitions)
            result = simulate_requests(requests, base, overrides, qd=qd, open_loop=False)
        except FslabError as exc:
            for name in [*(metric_name(model, s) for s in SUFFIXES), *(metric_name(model, r) for r in rates)]:
                metrics.append(Metric.of(name, None, f"{label}: failed: {exc}"))
            prov["models"][model] = {"error": str(exc)}
            continue
        facts = result.get("model_facts", {})
        defined = "" if model == base else (
            f" ({model} = {base}" + "".join(f", {k} = {v}" for k, v in overrides.items()) + ")")
        label += defined
        noted = label + (f"; assumes {assumptions(facts)}" if assumptions(facts) else "")
        warning = cache_warning(model, facts.get("write_cache_absorbed_fraction"), facts)
        if warning:
            noted += f"; {warning}"
        for suffix, value in _values(result).items():
            if value is None and suffix in OPTIONAL_SUFFIXES:
                continue
            name = metric_name(model, suffix)
            metrics.append(Metric.of(name, value, noted))
        # Where the model's time went: each mechanism's share of its work time.
        time_ns = result.get("time_by_mechanism_ns", {})
        whole = whole_of(str(result.get("params", {}).get("kind", "")))
        for mechanism, share in shares(time_ns).items():
            metrics.append(Metric.of(metric_name(model, metric_suffix(mechanism)), share,
                                     f"{label}: share of {whole} spent in {mechanism}"))
        model_s = float(result["elapsed_ns"]) / 1e9
        if rates and work_s:
            work_note = (f"the workload's work ({work_s:.3g} s of it here) at the time model {model}{defined} "
                         f"needs for the {result['requests']} requests the file system issued for it "
                         f"({model_s:.3g} s, closed loop at queue depth {qd}); assumes the run is device-bound "
                         "(no CPU, page-cache or host time) and the request stream as this machine's kernel produced it"
                         + (f"; {assumptions(facts)}" if assumptions(facts) else "")
                         + (f"; {warning}" if warning else "") + (f"; {trace_note}" if trace_note else ""))
            for name, value in rates.items():
                predicted = value * work_s / model_s if model_s > 0 else None
                metrics.append(Metric.of(metric_name(model, name), predicted, "predicted, not measured: " + work_note))
        prov["models"][model] = {"elapsed_ns": result["elapsed_ns"], "work_s": work_s,
                                 "replay_wall_ns": result.get("replay_wall_ns"), "facts": facts,
                                 "time_by_mechanism_ns": time_ns}
    return metrics, prov
