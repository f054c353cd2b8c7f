"""Trace metrics: what the block layer was asked to do during a run.

Counts follow /sys/block/DEV/stat (completed requests; see ``_core.trace_match_requests``
for the FUA and empty-preflush rules). Sizes, sequentiality and seeks are taken over
*data requests in issue order* (issue events; completions when a trace has no issues),
per direction. Latency is issue to complete of the same request (same device, sector
and op, first in first out). Percentiles are on the 0-100 scale, numpy's linear method.
An md array's trace is taken as its md device: each bio queued to it is one request
(counts, sizes, sequentiality; no latency); ``members_view`` gives the members' requests.
Which of these a table or figure shows is its *stream* (``Stream``), always named: one
trace can hold two, and a table of one beside a figure of the other would disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..trace.formats import (
    ARRAY_DEV,
    EV_COMPLETE,
    EV_ISSUE,
    FLAG_BITS,
    MEMBER_DEVS,
    NO_COMM,
    OP_DISCARD,
    OP_FLUSH,
    OP_NAMES,
    OP_READ,
    OP_WRITE,
    SECTOR_BYTES,
    Trace,
    array_view,
    members_view,
)

DIRECTIONS = {"read": OP_READ, "write": OP_WRITE}


@dataclass(frozen=True)
class Stream:
    """Which requests of a trace a table or figure counts: ``text`` names it for a reader
    (after "on"), ``short`` where room is scarce (a bar's label). A plain device's trace has
    one stream; an md array's two, its md device's bios first: what the file system issued,
    and so what every table and figure of an array shows unless it says otherwise."""

    key: Literal["device", "md", "members"]
    text: str
    short: str


DEVICE = Stream("device", "the device", "device")
MD_DEVICE = Stream("md", "the md device (the bios the file system issued)", "md device")
MEMBERS = Stream("members", "its member disks (the requests the array issued)", "member disks")


def streams(trace: Trace) -> tuple[Stream, ...]:
    """The streams a trace holds, the one shown by default first."""
    if trace.meta.get(ARRAY_DEV) is None:
        return (DEVICE,)
    return (MD_DEVICE, MEMBERS) if trace.meta.get(MEMBER_DEVS) else (MD_DEVICE,)


def stream_view(trace: Trace, stream: Stream) -> Trace:
    """The requests of one stream as a plain trace: ``analyze`` of the md device's view
    equals ``analyze`` of the whole array trace, and ``data_requests`` of it picks the
    same bios that ``analyze`` counts. Raises ValueError for a stream the trace lacks."""
    if stream not in streams(trace):
        raise ValueError(f"this trace has no stream '{stream.key}' (it has "
                         f"{', '.join(s.key for s in streams(trace))})")
    if stream == MD_DEVICE:
        return array_view(trace, EV_COMPLETE)  # completes: what analyze counts
    if stream == MEMBERS:
        return members_view(trace)
    return trace


def shown(trace: Trace) -> tuple[Stream, Trace]:
    """The default stream of a trace and its view: what tables and figures show."""
    stream = streams(trace)[0]
    return stream, stream_view(trace, stream)


def match_requests(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """(latency_ns per event, -1 where none; counted flag per event) — see module doc."""
    c = trace.columns
    try:
        from .. import _core

        lat, counted = _core.trace_match_requests(
            *(np.ascontiguousarray(c[k]) for k in
              ("time_ns", "event", "dev", "sector", "nr_sector", "op", "flags")))
        return np.frombuffer(lat, np.int64), np.frombuffer(counted, np.uint8).astype(bool)
    except ImportError:
        return _match_requests_py(trace)


def _match_requests_py(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Pure-Python twin of the native pass (slow; used when the core is missing)."""
    c = trace.columns
    n = len(trace)
    lat = np.full(n, -1, np.int64)
    counted = np.zeros(n, bool)
    issued: dict[tuple[int, int, int], list[int]] = {}
    twins: dict[tuple[int, int, int], int] = {}
    t, ev, dev, sec, nr, op, fl = (c[k].tolist() for k in
                                   ("time_ns", "event", "dev", "sector", "nr_sector", "op", "flags"))
    for i in range(n):
        key = (dev[i], sec[i], op[i])
        if ev[i] == EV_ISSUE and op[i] != OP_FLUSH:
            issued.setdefault(key, []).append(t[i])
        elif ev[i] == EV_COMPLETE:
            if op[i] == OP_WRITE and nr[i] == 0 and twins.get((dev[i], sec[i], fl[i]), 0) > 0:
                twins[(dev[i], sec[i], fl[i])] -= 1
                continue
            counted[i] = True
            if op[i] == OP_WRITE and nr[i] > 0:
                twins[(dev[i], sec[i], fl[i])] = 1
            if op[i] != OP_FLUSH and issued.get(key):
                lat[i] = t[i] - issued[key].pop(0)
    return lat, counted


def _dist(values: np.ndarray) -> dict[str, float | int | None]:
    if len(values) == 0:
        return {"count": 0, "min": None, "median": None, "mean": None, "max": None,
                "p90": None, "p99": None}
    # fslab's one percentile definition, the nearest rank (as the Rust core's stats.rs).
    p50, p90, p99 = np.percentile(values, [50, 90, 99], method="inverted_cdf")
    return {"count": int(len(values)), "min": float(values.min()), "median": float(p50),
            "mean": float(values.mean()), "max": float(values.max()),
            "p90": float(p90), "p99": float(p99)}


def size_cdf(sizes: np.ndarray) -> dict[str, list[float]]:
    """Empirical CDF of request sizes: distinct sizes (bytes) and the fraction <= each."""
    if len(sizes) == 0:
        return {"bytes": [], "fraction": []}
    values, counts = np.unique(sizes, return_counts=True)
    return {"bytes": values.astype(float).tolist(),
            "fraction": (np.cumsum(counts) / len(sizes)).tolist()}


def data_requests(trace: Trace) -> np.ndarray:
    """Mask of the events that stand for data requests in issue order (see module doc)."""
    c = trace.columns
    kind = EV_ISSUE if np.any(c["event"] == EV_ISSUE) else EV_COMPLETE
    return (c["event"] == kind) & (c["nr_sector"] > 0) & ((c["op"] == OP_READ) | (c["op"] == OP_WRITE))


def analyze(trace: Trace, *, workload_bytes_written: float | None = None,
            with_cdf: bool = False, top_tasks: int = 10, native: bool = True) -> dict[str, Any]:
    """All metrics of one trace as plain data (JSON-ready). Units are in the key names or
    stated: sizes in bytes, latency in nanoseconds, seek distance in sectors.
    The native core does the per-event pass in one go; numpy is the fallback (and the
    cross-check in the tests)."""
    trace = array_view(trace, EV_COMPLETE)
    if native:
        try:
            from .. import _core
        except ImportError:
            pass  # no compiled core: the Python path below
        else:
            if hasattr(_core, "trace_summarize"):
                return _analyze_native(trace, _core, workload_bytes_written, with_cdf, top_tasks)
    c = trace.columns
    lat, counted = match_requests(trace)
    op = c["op"]
    nr = c["nr_sector"].astype(np.int64)
    out: dict[str, Any] = {
        "events": len(trace),
        "lost_events": trace.lost_events,
        "complete": trace.complete,
        "source": trace.meta.get("source"),
    }
    t = c["time_ns"]
    out["duration_s"] = float((int(t[-1]) - int(t[0])) / 1e9) if len(t) else 0.0
    requests = {}
    for name, code in (("read", OP_READ), ("write", OP_WRITE), ("flush", OP_FLUSH), ("discard", OP_DISCARD)):
        requests[name] = int(np.count_nonzero(counted & (op == code)))
    out["requests"] = requests
    out["sectors"] = {name: int(nr[counted & (op == code)].sum())
                      for name, code in (("read", OP_READ), ("write", OP_WRITE), ("discard", OP_DISCARD))}
    done_flags = c["flags"][counted]
    out["flags"] = {name: int(np.count_nonzero(done_flags & bit)) for name, bit in FLAG_BITS.items()
                    if name in ("sync", "meta", "fua", "preflush", "ahead")}
    data = data_requests(trace)
    sizes: dict[str, Any] = {}
    seq: dict[str, float | None] = {}
    seek: dict[str, Any] = {}
    cdfs: dict[str, Any] = {}
    for name, code in DIRECTIONS.items():
        m = data & (op == code)
        s = nr[m]
        start = c["sector"][m].astype(np.int64)
        sizes[name] = _dist(s * SECTOR_BYTES)
        if len(s) > 1:
            prev_end = start[:-1] + s[:-1]
            seq[name] = float(np.count_nonzero(start[1:] == prev_end) / (len(s) - 1))
            dist = start[1:] - prev_end
            seek[name] = {**_dist(np.abs(dist)), "forward_fraction": float(np.mean(dist >= 0))}
        else:
            seq[name] = None
            seek[name] = _dist(np.empty(0))
        if with_cdf:
            cdfs[name] = size_cdf(s * SECTOR_BYTES)
    out["size_bytes"] = sizes
    out["sequential_fraction"] = seq
    out["seek_distance_sectors"] = seek
    if with_cdf:
        out["size_cdf"] = cdfs
    latency: dict[str, dict[str, float | None]] = {}  # op -> count, mean, p50, p99, max (ns; None: no request)
    for name, code in DIRECTIONS.items():
        v = lat[(lat >= 0) & (op == code)]
        if len(v):
            p50, p99 = np.percentile(v, [50, 99], method="inverted_cdf")
            latency[name] = {"count": int(len(v)), "mean": float(v.mean()), "p50": float(p50),
                             "p99": float(p99), "max": float(v.max())}
        else:
            latency[name] = {"count": 0, "mean": None, "p50": None, "p99": None, "max": None}
    out["latency_ns"] = latency
    written = out["sectors"]["write"] * SECTOR_BYTES
    out["device_bytes_written"] = written
    out["write_amplification"] = (written / workload_bytes_written
                                  if workload_bytes_written else None)
    out["by_task"] = by_task(trace, top=top_tasks)
    return out


_PCTS = [50.0, 90.0, 99.0]


def _dist_native(d: dict[str, Any], scale: float = 1.0) -> dict[str, Any]:
    if not d["count"]:
        return _dist(np.empty(0))
    p50, p90, p99 = (v * scale for v in d["pct"])
    return {"count": d["count"], "min": d["min"] * scale, "median": p50, "mean": d["mean"] * scale,
            "max": d["max"] * scale, "p90": p90, "p99": p99}


def _analyze_native(trace: Trace, core: Any, workload_bytes_written: float | None,
                    with_cdf: bool, top_tasks: int) -> dict[str, Any]:
    c = trace.columns
    sm = core.trace_summarize(*(np.ascontiguousarray(c[k]) for k in
                                ("time_ns", "event", "dev", "sector", "nr_sector", "op", "flags", "comm")),
                              _PCTS)
    t = c["time_ns"]
    out: dict[str, Any] = {
        "events": len(trace), "lost_events": trace.lost_events, "complete": trace.complete,
        "source": trace.meta.get("source"),
        "duration_s": float((int(t[-1]) - int(t[0])) / 1e9) if len(t) else 0.0,
        "requests": {name: sm["requests"][code] for name, code in
                     (("read", OP_READ), ("write", OP_WRITE), ("flush", OP_FLUSH), ("discard", OP_DISCARD))},
        "sectors": {name: sm["sectors"][code] for name, code in
                    (("read", OP_READ), ("write", OP_WRITE), ("discard", OP_DISCARD))},
        "flags": {name: sm["flag_counts"][bit.bit_length() - 1] for name, bit in FLAG_BITS.items()
                  if name in ("sync", "meta", "fua", "preflush", "ahead")},
    }
    sizes, seq, seek, lat, cdfs = {}, {}, {}, {}, {}
    for name, d in zip(("read", "write"), sm["directions"]):
        sizes[name] = _dist_native(d["size_bytes"])
        seq[name] = d["sequential"] / d["transitions"] if d["transitions"] else None
        seek[name] = _dist_native(d["seek_sectors"])
        if d["transitions"]:
            seek[name]["forward_fraction"] = d["forward"] / d["transitions"]
        ln = d["latency_ns"]
        if ln["count"]:
            lat[name] = {"count": ln["count"], "mean": ln["mean"], "p50": ln["pct"][0],
                         "p99": ln["pct"][2], "max": ln["max"]}
        else:
            lat[name] = {"count": 0, "mean": None, "p50": None, "p99": None, "max": None}
        if with_cdf:
            hist = d["size_hist"]
            total = sum(k for _, k in hist) or 1
            cdfs[name] = {"bytes": [float(b) for b, _ in hist],
                          "fraction": (np.cumsum([k for _, k in hist]) / total).tolist()}
    out.update({"size_bytes": sizes, "sequential_fraction": seq, "seek_distance_sectors": seek})
    if with_cdf:
        out["size_cdf"] = cdfs
    out["latency_ns"] = lat
    written = out["sectors"]["write"] * SECTOR_BYTES
    out["device_bytes_written"] = written
    out["write_amplification"] = written / workload_bytes_written if workload_bytes_written else None
    names = trace.comm_names
    tasks = sorted(sm["tasks"], key=lambda x: -x[2])[:top_tasks]
    out["by_task"] = [{"task": names[i] if i < len(names) else f"#{i}", "requests": r, "bytes": b}
                      for i, r, b in tasks]
    return out


def by_task(trace: Trace, top: int = 10) -> list[dict[str, Any]]:
    """Data requests and bytes per issuing task (comm of issue events), largest first.
    Journal threads, writeback workers and the application show up under their names."""
    c = trace.columns
    m = data_requests(trace) & (c["comm"] != NO_COMM)
    if not np.any(m):
        return []
    codes = c["comm"][m].astype(np.int64)
    nbytes = c["nr_sector"][m].astype(np.int64) * SECTOR_BYTES
    reqs = np.bincount(codes)
    byts = np.bincount(codes, weights=nbytes)
    order = np.argsort(-byts)[:top]
    names = trace.comm_names
    return [{"task": names[i] if i < len(names) else f"#{i}", "requests": int(reqs[i]),
             "bytes": int(byts[i])} for i in order if reqs[i] > 0]


def summary_metrics(result: dict[str, Any]) -> dict[str, float]:
    """Flat run metrics (names carry units) for the store."""
    out: dict[str, float] = {}
    for d in ("read", "write", "flush", "discard"):
        out[f"trace_{d}_requests_count"] = result["requests"][d]
    for d in ("read", "write"):
        out[f"trace_{d}_sectors_count"] = result["sectors"][d]
        s = result["size_bytes"][d]
        if s["count"]:
            out[f"trace_{d}_size_mean_bytes"] = s["mean"]
            out[f"trace_{d}_size_median_bytes"] = s["median"]
            out[f"trace_{d}_size_max_bytes"] = s["max"]
            out[f"trace_{d}_size_min_bytes"] = s["min"]
        if result["sequential_fraction"][d] is not None:
            out[f"trace_{d}_sequential_fraction"] = result["sequential_fraction"][d]
        lat = result["latency_ns"][d]
        if lat["count"]:
            out[f"trace_{d}_latency_mean_ns"] = lat["mean"]
            out[f"trace_{d}_latency_p99_ns"] = lat["p99"]
    out["trace_lost_events_count"] = result["lost_events"] or 0
    if result.get("write_amplification") is not None:
        out["trace_write_amplification_ratio"] = result["write_amplification"]
    return out


OPS = OP_NAMES
