"""Tracing of one run, for job execution: a context manager around the workload that
leaves ``trace.parquet`` in the run's artifact directory and turns the trace into run
metrics (names with units; every one carries a note when the trace is incomplete)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import trace_metrics  # noqa: F401  (declares the metrics RunTrace.metrics makes)
from ..datarecords import datarecord, field
from ..devices import DeviceHandle
from ..jobdata.record import Metric

ARTIFACT_NAME = "trace.parquet"
MEMBER = "member"  # the prefix of an md member's counters among the capture's


@datarecord
class RunTrace:
    """What the trace of one run produced (filled in when the workload ends)."""

    path: Path
    # The device's counters at the trace's two cuts (idle moments: trace.capture), so the
    # trace's counts equal their difference.
    stat_before: dict[str, int] = field(default_factory=dict)
    stat_after: dict[str, int] = field(default_factory=dict)
    result: dict[str, Any] | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    # An md array: its members' requests (``trace_members_*``; ``result`` is the md device).
    members_result: dict[str, Any] | None = None

    def metrics(self, workload_metrics: dict[str, float]) -> list[Metric]:
        """Run metrics from the trace; write amplification uses the workload's own
        ``write_io_bytes`` when it reports one."""
        from ..analysis.traces import summary_metrics

        if self.result is None:
            return []
        written = workload_metrics.get("write_io_bytes")
        flat = {}
        for prefix, result in (("trace_", self.result), ("trace_members_", self.members_result)):
            if result is None:
                continue
            if written:
                result["write_amplification"] = result["device_bytes_written"] / written
            flat.update({prefix + name.removeprefix("trace_"): v for name, v in summary_metrics(result).items()})
        # What tracing took: the reader's CPU while the workload ran (the kernel's own
        # tracepoint cost is per event, so the event count carries it; bench/bench_trace).
        reader = self.meta.get("reader") or {}
        if "cpu_ns_during" in reader:
            flat["trace_reader_cpu_during_run_ns"] = float(reader["cpu_ns_during"])
        flat["trace_events_count"] = float(self.meta.get("events_total", self.result["events"]))
        note = None
        if not self.result["complete"]:
            note = f"incomplete trace: {self.result['lost_events']} events lost"
        return [Metric.of(name, v, note) for name, v in flat.items()]

    def provenance(self) -> dict[str, Any]:
        if self.result is None:
            return {"artifact": ARTIFACT_NAME, "captured": False}
        out = {"artifact": ARTIFACT_NAME, "captured": True, "complete": self.result["complete"],
               "lost_events": self.result["lost_events"],
               "events": self.meta.get("events_total", self.result["events"]),
               "method": self.meta.get("capture_method"), "reader": self.meta.get("reader"),
               # How it was stamped and filtered: the times are CLOCK_MONOTONIC either way.
               "trace_clock": self.meta.get("trace_clock"), "kernel_filter": self.meta.get("kernel_filter"),
               # Where the trace was cut (idle moments) and whether both cuts found one: only
               # then do its counts equal the device counters' by construction.
               "window": self.meta.get("window")}
        if self.members_result is not None:
            from ..trace.formats import ARRAY_DEV, MEMBER_DEVS  # numpy: only where a trace was taken

            out["array"] = {"trace_metrics": "the md device: bios queued to it (block_bio_queue)",
                            "trace_members_metrics": "its member devices: requests (block_rq_*)",
                            "md_dev": self.meta.get(ARRAY_DEV), "member_devs": self.meta.get(MEMBER_DEVS)}
        return out


def load_trace_modules(replayed: bool = False) -> None:
    """Import what a traced run imports as it goes (numpy, the reader, the analysis, pyarrow's
    Parquet writer; the device models where the trace is ``replayed``), for a process that
    forks a job's process after it (fslab.job.serve)."""
    import pyarrow.parquet  # noqa: F401

    from ..analysis import traces  # noqa: F401
    from ..trace import capture, formats  # noqa: F401

    if replayed:
        from .. import predictions  # noqa: F401


@contextlib.contextmanager
def traced(enabled: bool, dev: DeviceHandle, artifact_dir: Path) -> Iterator[RunTrace | None]:
    """``with traced(ctx.trace, dev, path) as rt:`` — yields None when tracing is off."""
    if not enabled:
        yield None
        return
    from ..analysis.traces import analyze
    from ..trace.capture import DEFAULT_EVENTS, TraceCapture
    from ..trace.formats import ARRAY_DEV, MEMBER_DEVS, members_view, write_parquet

    rt = RunTrace(artifact_dir / ARTIFACT_NAME)
    if dev.requests_on is not None:  # dm-delay: bios above, the requests on the disk below
        dev = dev.requests_on
    members = [m.dev_t for m in dev.members]
    events: tuple[str, ...] = DEFAULT_EVENTS
    event_devs: dict[str, list[int]] | None = None
    if members:  # md is bio-based: its own I/O is bios; the members have the requests
        events = ("block_bio_queue", *DEFAULT_EVENTS)
        event_devs = {"block_bio_queue": [dev.dev_t], **{e: members for e in DEFAULT_EVENTS}}

    def counters() -> dict[str, int]:
        # The array's members too (keys "member0.write_ios", ...): the trace holds their
        # requests, so they must be idle at the cuts.
        of_members = {f"{MEMBER}{i}.{k}": v for i, m in enumerate(dev.members) for k, v in m.read_stat().items()}
        return {**dev.read_stat(), **of_members}

    cap = TraceCapture([dev.dev_t, *members], device_name=dev.path, events=events, event_devs=event_devs,
                       counters=counters)
    with cap:
        yield rt
    for own, read in ((rt.stat_before, cap.counters_before), (rt.stat_after, cap.counters_after)):
        own.update({k: v for k, v in read.items() if not k.startswith(MEMBER)})
    if cap.trace is not None:
        if members:
            cap.trace.meta.update({ARRAY_DEV: dev.dev_t, MEMBER_DEVS: members})
        write_parquet(cap.trace, rt.path)
        rt.meta = {**cap.trace.meta, "events_total": len(cap.trace)}  # an array's analysis sees only its bios
        rt.result = analyze(cap.trace)  # an array's trace is analysed as its md device
        if members:
            rt.members_result = analyze(members_view(cap.trace))
