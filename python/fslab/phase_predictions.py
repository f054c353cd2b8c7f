"""Per-test predictions for a workload that runs its tests one after another in one trace
(Bonnie++): the trace's requests are split by the tests' spans and each test's requests
are replayed on each device model, giving ``pred_<model>_<test metric>`` = the test's own
work (bytes, seeks or files) over the model's time for those requests.

Attribution and its limits (each prediction's note says which apply):
- A request belongs to the test during which it was **issued** (its block_rq_issue time
  on the trace's clock, CLOCK_MONOTONIC, between the test's start and end). Requests
  issued between tests (Bonnie++ creating or removing its files) belong to none; the
  provenance counts them, so the tests' counts and the between-tests count add up to the
  trace's requests.
- Writeback of a write test's dirty pages can be issued after the test ended and then
  counts in the next test. A write test whose own bytes did not all reach the device
  inside it is marked with the share that did: its figure is optimistic (the model never
  saw the rest of its work). Bonnie++'s ``fsync`` option (-b) would flush within the test,
  but after every write, which changes the test itself, so it is not turned on for this.
- Each test is replayed alone on a fresh model, closed loop at the concurrency the trace
  shows during that test (the seek test's five processes keep several requests in
  flight, the block tests about one), at least the workload's own depth: state a
  previous test left (an SSD's mapping and garbage, a disk's head position) is not
  carried over.
- A write cache must not hide the disk: a test that wrote is replayed with a cache flush
  after its last request, so its time includes putting the cached data on the medium
  (Bonnie++ itself does not fsync; on a real disk that data would be written during the
  next test). Should a model's cache still have acknowledged most of the bytes with no
  flush to wait for (a test without writes has none), the figure is marked
  (``predictions.cache_warning``).
- The figure assumes the test is device-bound (no CPU, page-cache or host time).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import FslabError
from .jobdata.record import Metric
from .predictions import (
    assumptions,
    cache_warning,
    metric_name,
    read_run_trace,
    replay_depth,
    resolve_model,
    window_concurrency,
)

if TYPE_CHECKING:
    from .simulate import Requests
    from .trace.formats import Trace
    from .workloads.phases import PhaseSpan

# A write test whose bytes reached the device less than this much inside the test is marked.
WRITTEN_INSIDE_FRACTION = 0.9
# What starts each mark in a prediction's note: reports look for it (``is_marked``).
MARK = "marked: "


def is_marked(note: str | None) -> bool:
    """Whether a per-test prediction's note carries a mark (not the device's answer to the
    test's whole work, or a cache's)."""
    return bool(note) and MARK in str(note)


def split_by_spans(times_ns: Sequence[int], spans: Sequence[tuple[int, int]]) -> tuple[list[list[int]], list[int]]:
    """Indexes of the requests issued within each span ((start, end) ns, inclusive bounds;
    the first span that holds a time takes it), and the indexes issued within none."""
    per_span: list[list[int]] = [[] for _ in spans]
    outside: list[int] = []
    bounds = [(int(lo), int(hi)) for lo, hi in spans]
    for i, t in enumerate(times_ns):
        for j, (lo, hi) in enumerate(bounds):
            if lo <= t <= hi:
                per_span[j].append(i)
                break
        else:
            outside.append(i)
    return per_span, outside


def _subset(requests: Any, index: list[int]) -> Any:
    from .simulate import Requests

    sub = Requests()
    sub.time_ns = [requests.time_ns[i] for i in index]
    sub.op = bytearray(requests.op[i] for i in index)
    sub.sector = [requests.sector[i] for i in index]
    sub.nbytes = [requests.nbytes[i] for i in index]
    sub.fua = bytearray(requests.fua[i] for i in index)
    return sub


def _flushed(requests: Any) -> Any:
    """The requests and a cache flush after the last one (it completes once a write-back
    cache has put every byte on the medium)."""
    from .simulate import Requests

    out = Requests(list(requests.time_ns), bytearray(requests.op), list(requests.sector),
                   list(requests.nbytes), bytearray(requests.fua))
    out.append(requests.time_ns[-1], "F", 0, 0)
    return out


def _bytes(requests: Any, op: str) -> int:
    code = ord(op)
    return sum(n for o, n in zip(requests.op, requests.nbytes) if o == code)


def _marks(span: PhaseSpan, written: int, read: int) -> list[str]:
    """What makes this test's figure less than the device's answer to its whole work."""
    out = []
    expected = span.writes_bytes
    if expected and written < WRITTEN_INSIDE_FRACTION * expected:
        out.append(f"{MARK}only {written / expected:.0%} of the test's {expected >> 20} MiB written reached the device "
                   "while it ran (the rest was written back later and counts in later tests, by issue time): "
                   "the figure is optimistic")
    wanted = span.reads_bytes
    if wanted and read < WRITTEN_INSIDE_FRACTION * wanted:
        out.append(f"{MARK}{read / wanted:.0%} of the test's {wanted >> 20} MiB read came from the device "
                   "(the rest from the page cache)")
    return out


def predict_phases(trace_path: Path, spans: Sequence[PhaseSpan], models: Sequence[str], min_qd: int = 1,
                   definitions: Mapping[str, Mapping[str, Any]] | None = None,
                   trace_note: str | None = None,
                   loaded: tuple[Trace, Requests] | None = None) -> tuple[list[Metric], dict[str, Any]]:
    """(metrics, provenance) for each span (a workload's ``WorkloadResult.phases``) on each
    model; ``min_qd``: the workload's own queue depth (the least each test is replayed at).
    A test with no requests, or a model that fails, gives a metric without a number
    whose note says why; predictions never cost the measured run."""
    from .simulate import simulate_requests

    prov: dict[str, Any] = {"attribution": "issue time within the test's span (CLOCK_MONOTONIC)",
                            "replay": "each test alone on a fresh model, closed loop at the test's own concurrency "
                                      "in the trace; a cache flush after the last request of a test that wrote",
                            "tests": {}}
    metrics: list[Metric] = []
    try:
        trace, requests = loaded or read_run_trace(trace_path)
        concurrency = window_concurrency(trace, [(s.start_ns, s.end_ns) for s in spans])
    except (FslabError, OSError, ValueError, KeyError) as exc:
        prov["error"] = str(exc)
        return [Metric.of(metric_name(m, s.metric), None, f"not predicted: {exc}")
                for s in spans for m in models], prov
    per_span, outside = split_by_spans(requests.time_ns, [(s.start_ns, s.end_ns) for s in spans])
    prov.update({"requests": len(requests), "requests_between_tests": len(outside)})
    for span, index, seen in zip(spans, per_span, concurrency):
        sub = _subset(requests, index)
        written, read = _bytes(sub, "W"), _bytes(sub, "R")
        marks = _marks(span, written, read)
        qd = replay_depth(min_qd, seen)
        test: dict[str, Any] = {"start_ns": int(span.start_ns), "end_ns": int(span.end_ns), "requests": len(sub),
                "written_bytes": written, "read_bytes": read, "work": span.work, "work_unit": span.work_unit,
                "trace_concurrency": seen, "qd": qd, "flushed": written > 0, "marks": marks, "models": {}}
        prov["tests"][span.key] = test
        for model in models:
            name = metric_name(model, span.metric)
            head = f"predicted on model {model}, not measured: Bonnie++'s {span.key} test"
            if not len(sub):
                metrics.append(Metric.of(name, None, f"{head}: no request reached the device while it ran "
                                                     "(page cache): nothing for a model to time"))
                continue
            try:
                base, overrides = resolve_model(model, definitions)
                result = simulate_requests(_flushed(sub) if written else sub, base, overrides, qd=qd,
                                           open_loop=False)
            except FslabError as exc:
                metrics.append(Metric.of(name, None, f"{head}: failed: {exc}"))
                test["models"][model] = {"error": str(exc)}
                continue
            facts = result.get("model_facts", {})
            model_s = float(result["elapsed_ns"]) / 1e9
            # With the closing flush the time includes emptying the cache: the disk is not hidden.
            warning = None if written else cache_warning(model, facts.get("write_cache_absorbed_fraction"), facts)
            said = assumptions(facts)
            note = (f"{head}: its work ({span.work:g} {span.work_unit}) over the time the model needs for the "
                    f"{len(sub)} requests issued during it ({model_s:.3g} s; each test replayed alone on a fresh "
                    f"model, closed loop at queue depth {qd}, the test's concurrency in the trace"
                    + (", then a cache flush, so cached writes reach the medium within the test" if written else "")
                    + "); assumes the test is device-bound"
                    + (f"; {said}" if said else "")
                    + "".join(f"; {m}" for m in ([span.note] if span.note else []) + marks)
                    + (f"; {MARK}{warning}" if warning else "") + (f"; {trace_note}" if trace_note else ""))
            value = float(span.work) / model_s if model_s > 0 else None
            metrics.append(Metric.of(name, value, note))
            test["models"][model] = {"elapsed_ns": result["elapsed_ns"], "predicted": value,
                                     "cache_warning": warning,
                                     "write_cache_absorbed_fraction": facts.get("write_cache_absorbed_fraction")}
    return metrics, prov
