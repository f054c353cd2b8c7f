"""Block-trace overhead and analysis speed, each a ratio measured in one run.

1. tmpfs-backed loop device (CPU-bound: 4 KiB random writes, io_uring, queue depth 32,
   O_DIRECT on the raw device): traced IOPS / untraced IOPS with fslab's capture as a
   traced run uses it (raw reader, the kernel's ``dev ==`` filter, the TSC clock where it
   is the kernel's clocksource). Target >= 0.95, zero lost events. Beside it, the kernel's
   floor: the same tracepoints and settings, no reader at all (events stay in a buffer
   large enough for the run); the capture with the mono clock (what it used before: what
   the TSC clock buys); the reader's CPU while fio ran, per event, from its own thread
   clocks.
2. Loop device on an image on the normal disk: the same ratio and target.
3. The same traced fio job in ext4 and in xfs (files on the tmpfs loop): the traced /
   untraced ratio of each; tracing must cost both the same fraction within noise.
4. Analysis throughput on a synthetic 20-million-event trace. Target >= 100 M events/s.

Runs alternate (untraced, traced, ...) and each ratio is the median of per-round ratios of
adjacent runs, so drift of the shared machine hits every configuration alike. Where the
IOPS ratios of a run spread too widely to tell 5% (a shared machine), the verdict takes
the ratio of the machine's busy CPU time per I/O instead: user, system, irq and softirq
time of every CPU while fio ran (from /proc/stat; not idle, iowait, or steal, the time
another guest of the host had the CPU), which holds everything an I/O cost: fio, the loop
device's workers, the completions in softirq where block_rq_complete fires, the
tracepoints and the reader. The older measure, fio's CPU and the loop workers' only, is
printed beside it.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

RUNTIME_S = int(os.environ.get("FSLAB_BENCH_TRACE_RUNTIME_S", "3"))
ROUNDS = int(os.environ.get("FSLAB_BENCH_TRACE_ROUNDS", "9"))
TARGET_RATIO = 0.95
ANALYSIS_TARGET = 100e6
IMAGE_BYTES = 1 << 30
FLOOR_BUFFER_KB = 262144  # a CPU: holds a 3 s run at 600k IOPS


@contextlib.contextmanager
def _loop_on(image: Path) -> Iterator[str]:
    with open(image, "wb") as f:
        f.truncate(IMAGE_BYTES)
    dev = subprocess.run(["losetup", "--find", "--show", "--direct-io=off", str(image)],
                         check=True, capture_output=True, text=True).stdout.strip()
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)


@contextlib.contextmanager
def _tmpfs(path: Path) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={IMAGE_BYTES + (64 << 20)}", "fslab-bench", str(path)],
                   check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=False)


def _kworkers() -> dict[int, tuple[str, int]]:
    """pid -> (comm, CPU ticks) of every kernel worker thread."""
    out = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError):
            text = stat.read_text()
            comm = text[text.index("(") + 1:text.rindex(")")]
            if comm.startswith("kworker"):
                f = text[text.rindex(")") + 2:].split()
                out[int(stat.parent.name)] = (comm, int(f[11]) + int(f[12]))  # utime + stime
    return out


def _loop_worker_cpu_s(before: dict[int, tuple[str, int]], loop: str) -> float:
    """CPU seconds since ``before`` of the workers that last ran ``loop``'s work queue
    (their names end in -loopN or +loopN): the loop device's half of each I/O."""
    ticks = 0
    for pid, (comm, t) in _kworkers().items():
        if comm.endswith(f"-{loop}") or comm.endswith(f"+{loop}"):
            ticks += t - before.get(pid, (comm, 0))[1]
    return ticks / os.sysconf("SC_CLK_TCK")


def _busy_ticks() -> int:
    """Busy CPU time of the machine so far, in clock ticks: user, nice, system, irq and
    softirq of every CPU (/proc/stat's first line), not idle, iowait or steal."""
    f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return f[0] + f[1] + f[2] + f[5] + f[6]


@dataclass
class Run:
    iops: float
    cpu_ns_per_io: float  # fio's CPU + the loop device's workers' CPU, per I/O
    busy_ns_per_io: float = 0.0  # the machine's busy CPU time while fio ran, per I/O


def _fio_iops(target: str, loop: str, extra: tuple[str, ...] = ()) -> Run:
    k0 = _kworkers()
    b0 = _busy_ticks()
    out = subprocess.run(
        ["fio", "--name=b", f"--filename={target}", "--rw=randwrite", "--bs=4k", "--direct=1",
         "--ioengine=io_uring", "--iodepth=32", "--time_based", f"--runtime={RUNTIME_S}",
         "--norandommap", "--randrepeat=0", "--output-format=json", *extra],
        check=True, capture_output=True, text=True).stdout
    busy_s = (_busy_ticks() - b0) / os.sysconf("SC_CLK_TCK")
    kworker_s = _loop_worker_cpu_s(k0, loop)
    j = json.loads(out[out.index("{"):])["jobs"][0]
    fio_s = (j["usr_cpu"] + j["sys_cpu"]) / 100 * j["job_runtime"] / 1000
    ios = max(1, j["write"]["total_ios"])
    return Run(float(j["write"]["iops"]), (fio_s + kworker_s) * 1e9 / ios, busy_s * 1e9 / ios)


@dataclass
class Measured:
    runs: list[Run] = field(default_factory=list)
    lost: int = 0
    events: int = 0
    reader_cpu_ns: int = 0

    @property
    def iops(self) -> list[float]:
        return [r.iops for r in self.runs]

    def ratios(self, base: Measured) -> list[float]:
        """traced / untraced IOPS of each round."""
        return [t.iops / b.iops for t, b in zip(self.runs, base.runs)]

    def cpu_ratios(self, base: Measured) -> list[float]:
        """untraced / traced CPU per I/O of each round (fio's and the loop workers'), the
        reader's CPU spread evenly over the rounds' I/Os."""
        extra = self.reader_cpu_ns / max(1, sum(r.iops * RUNTIME_S for r in self.runs))
        return [b.cpu_ns_per_io / (t.cpu_ns_per_io + extra) for t, b in zip(self.runs, base.runs)]

    def busy_ratios(self, base: Measured) -> list[float]:
        """untraced / traced busy CPU of the machine per I/O of each round: what the IOPS
        ratio is on a CPU-bound device, without the swings of a shared machine's load."""
        return [b.busy_ns_per_io / t.busy_ns_per_io for t, b in zip(self.runs, base.runs)]


def _floor_run(dev_t: int, run: Callable[[], Run]) -> tuple[Run, int]:
    """The kernel's part alone: the same events and filter, no reader during the run (the
    buffer holds the whole run; read after it only to count what was lost)."""
    from fslab.trace import capture

    capture.READ_DURING_RUN = False
    try:
        with capture.TraceCapture(dev_t, method="raw", buffer_kb=FLOOR_BUFFER_KB) as cap:
            iops = run()
    finally:
        capture.READ_DURING_RUN = True
    return iops, int(cap.trace.lost_events or 0)


def _measure(dev_t: int, run: Callable[[], Run], methods: list[str]) -> dict[str, Measured]:
    """Per method ('none' = untraced, 'raw' = fslab's capture, 'mono' = the same with the
    mono clock, 'floor' = no reader): IOPS of each round, lost events and the reader's CPU
    while fio ran."""
    from fslab.trace.capture import TraceCapture

    out = {m: Measured() for m in methods}
    run()  # warm-up: allocate the image's pages
    for _ in range(ROUNDS):
        for m in methods:
            r = out[m]
            if m == "none":
                r.runs.append(run())
            elif m == "floor":
                one, lost = _floor_run(dev_t, run)
                r.runs.append(one)
                r.lost += lost
            else:
                settings = {"clock": "mono"} if m == "mono" else {}
                with TraceCapture(dev_t, method="raw", **settings) as cap:
                    r.runs.append(run())
                r.lost += int(cap.trace.lost_events or 0)
                r.events += len(cap.trace)
                r.reader_cpu_ns += int(cap.trace.meta["reader"].get("cpu_ns_during", 0))
    return out


def _spread(v: list[float]) -> str:
    q = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3
    return f"IQR {q[0]:.3f}-{q[2]:.3f}"


def _verdict(name: str, r: dict[str, Measured]) -> None:
    """IOPS ratio and busy-CPU-per-I/O ratio, medians over rounds. The verdict uses the IOPS
    ratio when its spread is below the 5% margin; on a loaded machine (spread wider than
    that) the busy-CPU-per-I/O ratio, which the load moves far less."""
    base, raw = r["none"], r["raw"]
    iops = raw.ratios(base)
    busy = raw.busy_ratios(base)
    per_event = raw.reader_cpu_ns / max(1, raw.events)
    med = statistics.median
    print(f"{name}: untraced median {med(base.iops):,.0f} IOPS, {med(x.busy_ns_per_io for x in base.runs):,.0f} ns "
          f"busy CPU per I/O; traced median {med(raw.iops):,.0f} IOPS, "
          f"{med(x.busy_ns_per_io for x in raw.runs):,.0f} ns; {raw.lost} events lost in {ROUNDS} runs; reader CPU "
          f"while fio ran {per_event:.1f} ns per event ({raw.events:,} events)")
    for m, label in (("floor", "kernel floor (the same tracepoints and settings, no reader during the run)"),
                     ("mono", "with the mono clock (before)")):
        if m in r:
            other = r[m]
            print(f"  {label}: IOPS ratio median {med(other.ratios(base)):.3f} ({_spread(other.ratios(base))}), "
                  f"busy-CPU-per-I/O ratio median {med(other.busy_ratios(base)):.3f} "
                  f"({_spread(other.busy_ratios(base))}), {other.lost} lost")
    print(f"  per-round traced/untraced IOPS ratios (n={ROUNDS}, {RUNTIME_S} s runs): "
          + ", ".join(f"{x:.3f}" for x in iops))
    print("  per-round untraced/traced busy-CPU-per-I/O ratios: " + ", ".join(f"{x:.3f}" for x in busy))
    print(f"  fio's and the loop workers' CPU per I/O alone (the earlier measure): ratio median "
          f"{med(raw.cpu_ratios(base)):.3f} ({_spread(raw.cpu_ratios(base))})")
    q = statistics.quantiles(iops, n=4)
    noisy = q[2] - q[0] > 2 * (1 - TARGET_RATIO)
    ratio = med(busy if noisy else iops)
    basis = ("the machine's busy CPU per I/O: IOPS ratios too noisy on this machine now, IQR "
             f"{q[0]:.3f}-{q[2]:.3f}") if noisy else "IOPS"
    ok = ratio >= TARGET_RATIO and raw.lost == 0
    key = name.split()[0].replace("-", "_")
    print(f"trace_{key}_traced_per_untraced_ratio {ratio:.3f} (median, by {basis}; target >= {TARGET_RATIO}, "
          f"0 lost) {'PASS' if ok else 'FAIL'}")


def bench_tmpfs() -> None:
    from fslab.devices import handle_for

    with tempfile.TemporaryDirectory(prefix="fslab-bench-") as tmp, _tmpfs(Path(tmp) / "t") as t, \
            _loop_on(t / "img") as dev:
        r = _measure(handle_for(dev).dev_t, lambda: _fio_iops(dev, Path(dev).name),
                     ["none", "raw", "mono", "floor"])
    _verdict("tmpfs loop, 4 KiB randwrite io_uring qd32", r)


def bench_disk() -> None:
    from fslab.devices import handle_for

    with tempfile.TemporaryDirectory(prefix="fslab-bench-", dir="/var/tmp") as tmp, \
            _loop_on(Path(tmp) / "img") as dev:
        r = _measure(handle_for(dev).dev_t, lambda: _fio_iops(dev, Path(dev).name), ["none", "raw"])
    _verdict("disk-image loop, same job", r)


def bench_fairness() -> None:
    """Tracing must cost each file system the same fraction: ext4 and xfs on the same
    tmpfs loop, a 256 MiB file, the same fio job."""
    from fslab.devices import handle_for

    ratios: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="fslab-bench-") as tmp, _tmpfs(Path(tmp) / "t") as t, \
            _loop_on(t / "img") as dev:
        dev_t = handle_for(dev).dev_t
        mnt = Path(tmp) / "m"
        mnt.mkdir()
        for fs in ("ext4", "xfs"):
            subprocess.run([f"mkfs.{fs}", "-q", *(["-F"] if fs == "ext4" else ["-f"]), dev], check=True,
                           capture_output=True)
            subprocess.run(["mount", dev, str(mnt)], check=True)
            try:
                target = str(mnt / "f")
                r = _measure(dev_t, lambda target=target: _fio_iops(target, Path(dev).name, ("--size=256M",)),
                             ["none", "raw"])
            finally:
                subprocess.run(["umount", str(mnt)], check=False)
            ratios[fs] = r["raw"].busy_ratios(r["none"])
            iops = r["raw"].ratios(r["none"])
            print(f"  {fs}: untraced/traced busy CPU per I/O median {statistics.median(ratios[fs]):.3f} "
                  f"({_spread(ratios[fs])}, n={ROUNDS}); traced/untraced IOPS median {statistics.median(iops):.3f} "
                  f"({_spread(iops)}); {r['raw'].lost} lost")
    a, b = (statistics.median(v) for v in ratios.values())
    # noise: the larger of the two interquartile half-widths
    noise = max((q[2] - q[0]) / 2 for q in (statistics.quantiles(v, n=4) for v in ratios.values()))
    diff = abs(a - b)
    print(f"trace_cost_fs_difference {diff:.3f} (ext4 vs xfs, busy-CPU-per-I/O ratios; noise {noise:.3f} = larger IQR "
          f"half-width; target: difference <= max(noise, 0.02)) {'PASS' if diff <= max(noise, 0.02) else 'FAIL'}")


def synthetic_trace(n: int, seed: int = 4):
    """n events: n/2 requests (4 KiB random writes, some sequential runs), issue then
    complete 100 µs later, in time order."""
    from fslab.trace.formats import Trace

    rng = np.random.default_rng(seed)
    half = n // 2
    t_issue = np.arange(half, dtype=np.uint64) * 2000
    sector = (rng.integers(0, 1 << 21, half, dtype=np.uint64) * 8)
    nr = np.full(half, 8, np.uint32)
    cols = {
        "time_ns": np.concatenate([t_issue, t_issue + 100_000]),
        "event": np.concatenate([np.zeros(half, np.uint8), np.ones(half, np.uint8)]),
        "dev": np.full(2 * half, 7 << 20, np.uint32),
        "sector": np.concatenate([sector, sector]),
        "nr_sector": np.concatenate([nr, nr]),
        "op": np.ones(2 * half, np.uint8),
        "flags": np.full(2 * half, 8, np.uint8),
        "pid": np.full(2 * half, 100, np.int32),
        "comm": np.concatenate([np.zeros(half, np.uint16), np.full(half, 0xFFFF, np.uint16)]),
    }
    order = np.argsort(cols["time_ns"], kind="stable")
    return Trace({k: v[order] for k, v in cols.items()}, ["fio"], {"lost_events": 0, "complete": True})


def bench_analysis(n: int = 20_000_000, repetitions: int = 3) -> None:
    """Wall time and the analysing thread's CPU time (the native pass runs on the calling
    thread); on a shared machine the wall rate swings with other load, the CPU rate far
    less, so the verdict uses the CPU rate (median of the repetitions)."""
    from fslab.analysis.traces import analyze

    trace = synthetic_trace(n)
    wall, cpu = [], []
    for _ in range(repetitions):
        t0, c0 = time.perf_counter(), time.thread_time()
        r = analyze(trace)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.thread_time() - c0)
    assert r["requests"]["write"] == n // 2
    rate = n / statistics.median(cpu)
    print(f"analysis of {n:,} events, median of {repetitions}: {statistics.median(wall):.2f} s wall = "
          f"{n / statistics.median(wall) / 1e6:.1f} M events/s, {statistics.median(cpu):.2f} s CPU = "
          f"{rate / 1e6:.1f} M events/s of CPU")
    print(f"trace_analysis_rate_per_target_ratio {rate / ANALYSIS_TARGET:.2f} (CPU rate; target >= 1.00 = "
          f"{ANALYSIS_TARGET / 1e6:.0f} M events/s) {'PASS' if rate >= ANALYSIS_TARGET else 'FAIL'}")


def main() -> None:
    if os.geteuid() != 0:
        print("bench_trace: needs root (loop devices, tracefs): skipped")
        return
    bench_analysis()
    bench_tmpfs()
    bench_disk()
    bench_fairness()


if __name__ == "__main__":
    main()
