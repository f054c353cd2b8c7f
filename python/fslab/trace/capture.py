"""Capture block-layer events of one device through a private tracefs instance.

``TraceCapture`` is a context manager around a workload: on entry it creates
``instances/fslab-<pid>-<random>``, sets a clock comparable across CPUs, a no-overwrite
buffer, enables block_rq_issue and block_rq_complete (optionally insert/bio_queue),
starts the readers and turns tracing on. On exit — also on errors and Ctrl-C, with
signals deferred — it turns tracing off, drains the readers, counts lost events from per_cpu stats and removes
the instance.

With ``counters`` (a function reading the traced devices' /sys/block stat counters), the
counters are read at a moment the devices are idle, once the trace is on and again before it
is turned off, and the trace is cut at those two moments: its requests are then exactly the
ones the counters' difference counts. Without the cut a request that completes between
turning tracing on (or off) and reading the counters is in one count and not the other, as a
background journal or log write now and then is (1,291 traced writes against 1,290 counted).
A completion's tracepoint fires before the kernel counts it and before its in-flight count
drops, so a device that reads idle twice a millisecond apart with equal counters had no
request that either count could disagree on in between.

Readers: ``raw`` decodes per_cpu/cpuN/trace_pipe_raw pages in the native core (one
thread per CPU); ``text`` reads trace_pipe in a Python thread and parses afterwards
(the fallback when the native core or raw pipes are missing).

What the kernel's part costs the workload depends on two settings (4 KiB random writes
at queue depth 32 on a tmpfs loop, CPU per I/O against untraced, medians of 9 alternated
rounds: 0.865 with the mono clock and a ``dev ==`` filter, 0.894 with no filter, 0.899
with the TSC clock, 0.938 with both; docs/performance.md). The capture takes the
``x86-tsc`` clock where the kernel's own clocksource is the TSC (the counter itself
rather than the mono clock's conversion of it) and maps its stamps onto CLOCK_MONOTONIC
afterwards by the line through two (TSC, mono) readings taken around the capture, so a
trace's times are CLOCK_MONOTONIC nanoseconds either way. The line assumes the monotonic
clock ran at one rate against the TSC while the capture lasted; a time daemon changing
its slew meanwhile moves the mid-run stamps by up to that change times the duration
(latencies, differences of nearby stamps, barely at all). The kernel's device filter
stays on by default: without it every other device's events would pass through the
buffer (the reader keeps only the asked devices' events either way, and counts the others
as ``foreign``), so a capture's cost, memory and completeness would depend on unrelated
I/O; ``kernel_filter=False`` is for a machine with no other I/O. The text reader parses
trace_pipe's time stamps as seconds: the mono clock only.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import FslabError, MissingCapability
from ..resources import Resource, register, release
from ..signals import shielded
from .formats import EV_COMPLETE, EV_INSERT, EV_ISSUE, EV_QUEUE, Trace, parse_tracefs_text

TRACEFS = Path("/sys/kernel/tracing")
INSTANCE_PREFIX = "fslab-"
DEFAULT_EVENTS = ("block_rq_issue", "block_rq_complete")
EVENT_KIND = {"block_rq_issue": EV_ISSUE, "block_rq_complete": EV_COMPLETE,
              "block_rq_insert": EV_INSERT, "block_bio_queue": EV_QUEUE}
# The reader's CPU during the run is what tracing takes from the workload beyond the
# kernel's own tracepoint cost, so the raw reader sleeps until a CPU's buffer is
# BUFFER_PERCENT full and then drains it in one batch of sub-buffer-sized reads, keeping
# the raw bytes for decoding after the run (up to HOLD_MB a CPU).
# 64 MiB a CPU holds ~1.5 s of events at 600k IOPS (~70 B an event, two a request).
DEFAULT_BUFFER_KB = 65536
BUFFER_PERCENT = 50
SUBBUF_KB = 64  # one read returns one sub-buffer: 16x fewer reads than 4 KiB pages
NAP_MS = 1000
HOLD_MB = 256
READ_DURING_RUN = True  # False: read only after the run (loses what the buffer cannot hold)
IDLE_SLEEP_MS = 5  # text reader
TSC_CLOCK = "x86-tsc"
# The idle moment the counters are read at: two reads this far apart, equal and with nothing
# in flight, looked for for at most IDLE_WAIT_S (a device busy all that time — writeback
# after a buffered run, say — is cut where it is, and the trace says the counts may differ:
# a request in flight there is in one count only). The gap covers a completion the kernel
# has marked done but not yet counted (before 6.16 the in-flight count drops at the mark).
IDLE_GAP_S = 0.001
IDLE_WAIT_S = 1.0
CLOCKSOURCE = Path("/sys/devices/system/clocksource/clocksource0/current_clocksource")


def tracefs_root() -> Path:
    """The tracefs mount, mounting it at /sys/kernel/tracing if nothing is there yet."""
    if (TRACEFS / "instances").is_dir():
        return TRACEFS
    if os.geteuid() != 0:
        raise MissingCapability("block tracing needs root (tracefs)", fix="run fslab as root")
    import subprocess

    done = subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)],
                          capture_output=True, text=True)
    if done.returncode != 0 or not (TRACEFS / "instances").is_dir():
        raise MissingCapability(f"tracefs is not available at {TRACEFS}: {done.stderr.strip()}",
                                fix="mount -t tracefs nodev /sys/kernel/tracing")
    return TRACEFS


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError as exc:
        # tracefs refusing a write is the kernel saying no: every run would fail alike.
        raise MissingCapability(f"cannot write {text.strip()!r} to {path}: {exc.strerror}",
                                fix="check tracefs permissions and lockdown") from None


def remove_instance(inst: Path) -> None:
    """Disable and remove a tracefs instance (for `fslab cleanup`)."""
    _remove_instance(inst)


def _remove_instance(inst: Path) -> None:
    """Disable and remove a tracefs instance; retries while readers let go of it."""
    with contextlib.suppress(OSError):
        (inst / "tracing_on").write_text("0")
    with contextlib.suppress(OSError):
        (inst / "events" / "enable").write_text("0")
    for attempt in range(50):
        try:
            inst.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY or attempt == 49:
                raise FslabError(f"cannot remove tracefs instance {inst}: {exc.strerror}") from None
            time.sleep(0.1)


def remove_stale_instances() -> list[str]:
    """Remove fslab instances whose creating process is gone (after a crash or kill -9).
    Instances of live processes are left alone."""
    removed: list[str] = []
    root = TRACEFS / "instances"
    if not root.is_dir():
        return removed
    for inst in root.iterdir():
        m = re.fullmatch(rf"{INSTANCE_PREFIX}(\d+)-[0-9a-f]+", inst.name)
        if m and not Path(f"/proc/{m[1]}").exists():
            _remove_instance(inst)
            removed.append(inst.name)
    return removed


def read_lost_events(inst: Path) -> int:
    """Events the kernel dropped or overwrote, summed over CPUs (per_cpu/cpuN/stats)."""
    lost = 0
    for stats in sorted((inst / "per_cpu").glob("cpu*/stats")):
        for line in stats.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("overrun", "commit overrun", "dropped events"):
                with contextlib.suppress(ValueError):
                    lost += int(value.split()[0])
    return lost


class _TextReader:
    """Fallback: a thread copies trace_pipe text; parsed once tracing has stopped."""

    def __init__(self, inst: Path):
        self.fd = os.open(inst / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK)
        self.chunks: list[bytes] = []
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="fslab-trace-text", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while True:
                stopping = self.stop.is_set()
                try:
                    data = os.read(self.fd, 1 << 20)
                except BlockingIOError:
                    if stopping:
                        return  # tracing was off before this read: drained
                    time.sleep(IDLE_SLEEP_MS / 1000)
                    continue
                if data:
                    self.chunks.append(data)
                elif stopping:
                    return
                else:
                    time.sleep(IDLE_SLEEP_MS / 1000)
        except BaseException as exc:  # reported by finish()
            self.error = exc

    def finish(self) -> tuple[Trace, dict[str, Any]]:
        self.stop.set()
        self.thread.join()
        os.close(self.fd)
        if self.error:
            raise FslabError(f"reading trace_pipe failed: {self.error}")
        text = b"".join(self.chunks).decode("utf-8", "replace")
        trace = parse_tracefs_text(text.splitlines())
        return trace, {"bytes": len(text)}

    def abandon(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        with contextlib.suppress(OSError):
            os.close(self.fd)


class _RawReader:
    """The native per-CPU raw-page readers."""

    def __init__(self, inst: Path, root: Path, events: Sequence[str], page_size: int,
                 devices: Sequence[Sequence[int]] | None = None):
        """devices: per event, the devices whose events are kept (None: every device's, when
        the kernel's filter has already kept only those)."""
        from .. import _core

        formats = [((root / "events" / "block" / e / "format").read_text(), EVENT_KIND[e]) for e in events]
        header = (root / "events" / "header_page").read_text()
        cpus = sorted((inst / "per_cpu").glob("cpu*"), key=lambda p: int(p.name[3:]))
        paths = [str(c / "trace_pipe_raw") for c in cpus]
        self.capture = _core.RawTraceCapture(paths, header, formats, page_size, NAP_MS,
                                             _hold_bytes(len(cpus)), READ_DURING_RUN,
                                             None if devices is None else [list(d) for d in devices])

    def finish(self) -> tuple[Trace, dict[str, Any]]:
        raw = self.capture.finish()
        return Trace.from_core(raw, {}), dict(raw["stats"])

    def abandon(self) -> None:
        with contextlib.suppress(Exception):
            self.capture.finish()


def _hold_bytes(cpus: int) -> int:
    """Raw bytes a CPU's reader keeps undecoded: HOLD_MB, or less when memory is short
    (at most an eighth of what is available, shared by the CPUs)."""
    available = HOLD_MB << 20
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                available = int(line.split()[1]) * 1024 // 8 // max(1, cpus)
    return max(1 << 20, min(HOLD_MB << 20, available))


def _set_subbuf(inst: Path) -> None:
    """Larger ring-buffer sub-buffers where the kernel has them (6.8+): fewer reads."""
    f = inst / "buffer_subbuf_size_kb"
    if f.exists():
        with contextlib.suppress(OSError):
            f.write_text(str(SUBBUF_KB))
    f = inst / "buffer_percent"
    if f.exists():
        with contextlib.suppress(OSError):
            f.write_text(str(BUFFER_PERCENT))


def _page_size(root: Path, inst: Path | None = None) -> int:
    """Bytes one read of trace_pipe_raw returns at most: the instance's sub-buffer size
    where the kernel lets it be set, else header_page's data offset + size (4096 on
    x86-64)."""
    f = inst / "buffer_subbuf_size_kb" if inst is not None else None
    if f is not None and f.exists():
        with contextlib.suppress(OSError, ValueError):
            return int(f.read_text().split()[0]) * 1024
    text = (root / "events" / "header_page").read_text()
    m = re.search(r"char data;\s*offset:(\d+);\s*size:(\d+);", text)
    return int(m[1]) + int(m[2]) if m else 4096


def _tsc_pair() -> tuple[int, int] | None:
    """(TSC, CLOCK_MONOTONIC ns) read together, or None where the core cannot read the TSC."""
    try:
        from .. import _core
    except ImportError:
        return None
    read = getattr(_core, "tsc_mono_pair", None)
    return read() if read is not None else None


def _choose_clock(inst: Path, asked: str) -> str:
    """The instance's trace clock: x86-tsc where the kernel offers it and keeps time with
    the TSC itself (its clocksource: then the counter is synchronised across CPUs and
    steady, or the kernel would have dropped it), else mono. Raises MissingCapability when
    x86-tsc is asked for and cannot be had."""
    if asked == "mono":
        return asked
    try:
        offered = (inst / "trace_clock").read_text().replace("[", " ").replace("]", " ").split()
        tsc_kept = CLOCKSOURCE.read_text().strip() == "tsc"
    except OSError:
        offered, tsc_kept = [], False
    usable = TSC_CLOCK in offered and _tsc_pair() is not None
    if asked == TSC_CLOCK and not usable:
        raise MissingCapability(f"the {TSC_CLOCK} trace clock needs a kernel that offers it and a TSC fslab's "
                                "core can read", fix="trace with clock='auto'")
    return TSC_CLOCK if usable and (asked == TSC_CLOCK or tsc_kept) else "mono"


Counters = Callable[[], dict[str, int]]


def _idle(counters: Mapping[str, int]) -> bool:
    return all(v == 0 for k, v in counters.items() if k.endswith("in_flight"))


def idle_counters(read: Counters, *, gap_s: float | None = None,
                  wait_s: float | None = None) -> tuple[dict[str, int], int, bool]:
    """The devices' counters at a moment they were idle, that moment (CLOCK_MONOTONIC ns, the
    middle of two equal idle reads ``gap_s`` apart) and True; when no such moment came within
    ``wait_s``, the counters of one last read, the moment of that read and False."""
    gap_s = IDLE_GAP_S if gap_s is None else gap_s
    give_up = time.monotonic() + (IDLE_WAIT_S if wait_s is None else wait_s)
    while True:
        first = read()
        after_first = time.monotonic_ns()
        if _idle(first):
            time.sleep(gap_s)
            before_second = time.monotonic_ns()
            if read() == first:
                return first, (after_first + before_second) // 2, True
        if time.monotonic() > give_up:
            before = time.monotonic_ns()
            last = read()
            return last, (before + time.monotonic_ns()) // 2, False
        time.sleep(gap_s / 4)


def cut_to_window(trace: Trace, start_ns: int, stop_ns: int) -> int:
    """Drops the events stamped before ``start_ns`` or after ``stop_ns``; returns how many
    were dropped. The times are CLOCK_MONOTONIC ns, in order."""
    import numpy as np

    times = trace.columns["time_ns"]
    lo = int(np.searchsorted(times, np.uint64(start_ns), side="right"))
    hi = max(lo, int(np.searchsorted(times, np.uint64(stop_ns), side="left")))
    if lo == 0 and hi == len(times):
        return 0
    trace.columns = {name: col[lo:hi] for name, col in trace.columns.items()}
    return len(times) - (hi - lo)


def tsc_to_mono(ticks: Any, start: tuple[int, int], stop: tuple[int, int]) -> Any:
    """TSC readings -> CLOCK_MONOTONIC ns, by the line through two (TSC, mono) pairs taken
    around the capture. Each pair is good to a few tens of ns, so over a run of a second
    the rate is good to ~1e-7: a 100 µs latency to well under a nanosecond."""
    import numpy as np

    (t0, m0), (t1, m1) = start, stop
    if t1 <= t0 or m1 <= m0:
        raise FslabError(f"the TSC or the monotonic clock did not advance over the trace ({start} -> {stop})")
    ns_per_tick = (m1 - m0) / (t1 - t0)
    delta = ticks.astype(np.int64) - np.int64(t0)
    return (np.int64(m0) + np.rint(delta * ns_per_tick).astype(np.int64)).astype(np.uint64)


class TraceCapture:
    """``with TraceCapture(dev.dev_t) as cap: workload()`` then ``cap.trace``.

    dev_t: the kernel's device number (major << 20 | minor), or several of them.
    event_devs: per event name, the devices that event is filtered to (default: dev_t).
    method: 'raw', 'text' or 'auto' (raw when the native core has it).
    counters: reads the traced devices' stat counters (keys ending in ``in_flight`` must be 0
    when idle); the capture then reads them at idle moments after it starts and before it
    stops (``counters_before``/``counters_after``) and keeps only the events in between.
    clock: 'auto' (x86-tsc where it is the kernel's clocksource and the raw reader is used,
    else mono), 'mono' or 'x86-tsc' (raw reader only).
    kernel_filter: True (default) or False (raw reader only: the reader alone filters).
    Raises MissingCapability when tracefs or the block events are not available.
    """

    def __init__(self, dev_t: int | Sequence[int], *, method: str = "auto",
                 events: Sequence[str] = DEFAULT_EVENTS, buffer_kb: int = DEFAULT_BUFFER_KB,
                 device_name: str | None = None,
                 event_devs: Mapping[str, Sequence[int]] | None = None, clock: str = "auto",
                 kernel_filter: bool = True, counters: Counters | None = None):
        self.devs = [dev_t] if isinstance(dev_t, int) else list(dev_t)
        # Per event, the devices it is filtered to (default: all of dev_t): an md array's
        # bios are traced on the md device, its requests on the members.
        self.event_devs = dict(event_devs or {})
        if method not in ("auto", "raw", "text"):
            raise FslabError(f"trace method {method!r}: use raw, text or auto")
        unknown = [e for e in events if e not in EVENT_KIND]
        if unknown:
            raise FslabError(f"cannot trace {unknown}; known events: {', '.join(EVENT_KIND)}")
        if clock not in ("auto", "mono", TSC_CLOCK):
            raise FslabError(f"trace clock {clock!r}: use auto, mono or {TSC_CLOCK}")
        if not isinstance(kernel_filter, bool):
            raise FslabError(f"kernel_filter {kernel_filter!r}: use True or False")
        if method == "text" and (clock == TSC_CLOCK or not kernel_filter):
            raise FslabError("the text reader needs the mono clock and the kernel's device filter "
                             "(clock='mono' or 'auto', kernel_filter=True)")
        empty = [e for e, devs in (event_devs or {}).items() if not list(devs)]
        if empty:
            raise FslabError(f"event_devs names no device for {', '.join(empty)}: give at least one, "
                             "or leave the event out to trace dev_t")
        self.method = method
        self.clock_asked = clock
        self.kernel_filter = kernel_filter
        self.events = tuple(events)
        self.buffer_kb = buffer_kb
        self.counters = counters
        self.counters_before: dict[str, int] = {}
        self.counters_after: dict[str, int] = {}
        self._start_cut: tuple[int, bool] = (0, False)  # (moment, idle), with counters
        self.device_name = device_name
        self.instance: Path | None = None
        self._token = 0
        self.trace: Trace | None = None
        self._reader: _RawReader | _TextReader | None = None
        self._tsc_start: tuple[int, int] | None = None

    def _choose(self) -> str:
        if self.method != "auto":
            return self.method
        try:
            from .. import _core

            return "raw" if hasattr(_core, "RawTraceCapture") else "text"
        except ImportError:
            return "text"

    def __enter__(self) -> TraceCapture:
        root = tracefs_root()
        for e in self.events:
            if not (root / "events" / "block" / e).is_dir():
                raise MissingCapability(f"tracepoint block:{e} is not available on this kernel")
        self.method_used = self._choose()
        raw = self.method_used == "raw"
        if not raw and (self.clock_asked == TSC_CLOCK or not self.kernel_filter):
            raise MissingCapability("the raw reader (fslab's native core) is not available, and the text reader "
                                    "needs the mono clock and the kernel's device filter",
                                    fix="trace with clock='auto' and kernel_filter=True")
        name = f"{INSTANCE_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        with shielded():
            inst = root / "instances" / name
            self._token = register(Resource("tracefs", str(inst)))
            inst.mkdir()
            self.instance = inst
        try:
            _write(inst / "tracing_on", "0")
            self.clock = _choose_clock(inst, self.clock_asked) if raw else "mono"
            _write(inst / "trace_clock", self.clock)
            _write(inst / "options" / "overwrite", "0")  # when full, drop new events (counted)
            _set_subbuf(inst)
            _write(inst / "buffer_size_kb", str(self.buffer_kb))
            devices = [self.event_devs.get(e, self.devs) for e in self.events]
            for e, devs in zip(self.events, devices):
                if self.kernel_filter:
                    _write(inst / "events" / "block" / e / "filter", " || ".join(f"dev == {d}" for d in devs))
                _write(inst / "events" / "block" / e / "enable", "1")
            if raw:
                self._reader = _RawReader(inst, root, self.events, _page_size(root, inst),
                                          None if self.kernel_filter else devices)
            else:
                self._reader = _TextReader(inst)
            self._tsc_start = _tsc_pair() if self.clock == TSC_CLOCK else None
            self.started_ns = time.monotonic_ns()
            _write(inst / "tracing_on", "1")
            if self.counters is not None:
                self.counters_before, moment, idle = idle_counters(self.counters)
                self._start_cut = (moment, idle)
        except BaseException:
            with shielded():
                if self._reader is not None:
                    self._reader.abandon()
                _remove_instance(inst)
                release(self._token)
                self.instance = None
            raise
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        inst = self.instance
        assert inst is not None and self._reader is not None
        with shielded():
            try:
                if self.counters is not None and exc_type is None:
                    self.counters_after, stop_ns, idle_at_stop = idle_counters(self.counters)
                _write(inst / "tracing_on", "0")
                stopped_ns = time.monotonic_ns()
                tsc_stop = _tsc_pair() if self._tsc_start is not None else None
                if exc_type is not None:
                    self._reader.abandon()
                    return
                trace, reader_stats = self._reader.finish()
                clock_meta: dict[str, Any] = {"trace_clock": self.clock}
                if self._tsc_start is not None and tsc_stop is not None:
                    trace.columns["time_ns"] = tsc_to_mono(trace.columns["time_ns"], self._tsc_start, tsc_stop)
                    clock_meta["tsc_to_mono"] = {"tsc": [self._tsc_start[0], tsc_stop[0]],
                                                 "mono_ns": [self._tsc_start[1], tsc_stop[1]]}
                if self.counters is not None:
                    start_ns, idle_at_start = self._start_cut
                    clock_meta["window"] = {"start_ns": start_ns, "stop_ns": stop_ns,
                                            "events_outside": cut_to_window(trace, start_ns, stop_ns),
                                            "counters_exact": idle_at_start and idle_at_stop}
                lost = read_lost_events(inst)
                missed_pages = int(reader_stats.get("pages_with_missed", 0))
                trace.meta.update({
                    "source": "capture", "capture_method": self.method_used,
                    "devices": self.devs, "device_name": self.device_name,
                    "clock": "mono", **clock_meta, "kernel_filter": self.kernel_filter,
                    "events_enabled": list(self.events),
                    "start_ns": self.started_ns, "stop_ns": stopped_ns,
                    "lost_events": lost, "complete": lost == 0 and missed_pages == 0,
                    "reader": reader_stats, "kernel": os.uname().release,
                })
                self.trace = trace
            finally:
                self._reader = None
                _remove_instance(inst)
                release(self._token)
                self.instance = None
