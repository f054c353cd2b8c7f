"""What a BPF capture of the block layer would cost the workload, beside tracefs.

The same conditions as ``bench_trace.bench_tmpfs``: fio 4 KiB random writes, io_uring,
queue depth 32, O_DIRECT on a loop device backed by tmpfs (CPU-bound), 3 s runs. Each round
runs every configuration once, in turn:

- ``none``: untraced;
- ``floor``: fslab's tracefs events (block_rq_issue/complete, dev filter) with no reader
  during the run: the kernel's part of today's capture;
- ``btf-ring``: blockprobe.bpf.c on the tp_btf tracepoints, a 32-byte record an event into
  a BPF ring buffer, drained in batches by a C consumer;
- ``pcpu-ring``: the same with one ring buffer a CPU (no lock or line shared by the CPUs);
- ``pcpu-array``: the same records in one mmap-able array, a region a CPU written by plain
  stores (a slot claimed by an atomic add), drained on a timer: no lock, no wake-ups;
- ``btf-count``: the same hooks and filter, a per-CPU counter only (the lower bound of a
  capture);
- ``btf-nop``: the same hooks, programs that return at once (the hooks' own cost);
- ``raw-ring``: the ring program on raw_tp (fields through probe reads);
- ``tp-ring``: the ring program on the classic tracepoints (the kernel builds its trace
  record, then runs the program).

Ratios are per round against that round's untraced run, summarised by median, range and
n. CPU per I/O is bench_trace's (fio's CPU + the loop device's workers', per I/O) plus the
ksoftirqd threads' CPU during the run: on this kernel the loop device completes requests in
softirq, often in ksoftirqd, and the complete tracepoint runs there. The BPF consumer's CPU
while attached is added to its run's CPU per I/O. A BPF run counts its records against
/sys/block/loopN/stat (reads + writes completed while attached): issue and complete
records must both equal it, with none dropped.

Needs root, fio, clang, llvm, libbpf-dev and bpftool (Debian). Run from the repository:
``PYTHONPATH=python python -m bench.bpf_probe.bench_bpf`` (FSLAB_BENCH_TRACE_ROUNDS,
FSLAB_BENCH_TRACE_RUNTIME_S as for bench_trace; FSLAB_BPF_METHODS to pick configurations,
FSLAB_BPF_PROBE to use a loader already built by build.sh).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import statistics
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from bench.bench_trace import ROUNDS, RUNTIME_S, Run, _fio_iops, _floor_run, _loop_on, _tmpfs

HERE = Path(__file__).parent
BPF_METHODS = ("btf-ring", "pcpu-ring", "pcpu-array", "btf-count", "btf-nop", "raw-ring", "tp-ring")
# Left out by default: raw-ring, the same work as btf-ring through probe reads, slower a call
# by bpf_stats (289/245 ns against 164/146 ns, issue/complete, on a loaded machine), and
# tp-ring (the classic tracepoint: the kernel's record is built first; it loses events
# whenever any BPF program already runs on the CPU).
# Every ratio is against the round's untraced run, so "none" is always measured.
METHODS = tuple(dict.fromkeys(["none", *os.environ.get(
    "FSLAB_BPF_METHODS", "floor,btf-ring,pcpu-ring,pcpu-array,btf-count,btf-nop").split(",")]))


def build(out: Path) -> Path:
    """Compile the probe for the running kernel; the loader's path."""
    subprocess.run(["sh", str(HERE / "build.sh"), str(out)], check=True)
    return out / "blockprobe"


def _softirqd_ticks() -> int:
    """CPU ticks (utime + stime) of the ksoftirqd threads so far."""
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError):
            text = stat.read_text()
            if text[text.index("(") + 1:text.rindex(")")].startswith("ksoftirqd/"):
                f = text[text.rindex(")") + 2:].split()
                ticks += int(f[11]) + int(f[12])
    return ticks


def fio_run(dev: str) -> Run:
    """bench_trace's fio run, its CPU per I/O with the ksoftirqd threads' CPU added."""
    t0 = _softirqd_ticks()
    r = _fio_iops(dev, Path(dev).name)
    soft_ns = (_softirqd_ticks() - t0) * 1e9 / os.sysconf("SC_CLK_TCK")
    return Run(r.iops, r.cpu_ns_per_io + soft_ns / max(1.0, r.iops * RUNTIME_S))


def _completed(sysfs: str) -> int:
    """Reads + writes completed on the device so far (/sys/block/X/stat fields 1 and 5)."""
    f = Path(f"/sys/block/{sysfs}/stat").read_text().split()
    return int(f[0]) + int(f[4])


@dataclass
class Probed:
    run: Run
    device_ios: int  # reads + writes the device completed while the probe was attached
    report: dict  # the probe's JSON line


def probed_run(probe: Path, mode: str, dev: str) -> Probed:
    """One fio run with the probe attached from before fio starts to after it ends."""
    st = os.stat(dev)
    p = subprocess.Popen([str(probe), mode, str(os.major(st.st_rdev)), str(os.minor(st.st_rdev))],
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        line = p.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"blockprobe {mode} did not attach (said {line!r}, exit {p.wait()})")
        sysfs = Path(dev).name
        c0 = _completed(sysfs)
        run = fio_run(dev)
        ios = _completed(sysfs) - c0
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    if p.returncode != 0:
        raise RuntimeError(f"blockprobe {mode} exited {p.returncode}")
    return Probed(run, ios, json.loads(out.strip().splitlines()[-1]))


@dataclass
class Series:
    runs: list[Run] = field(default_factory=list)
    extra_ns_per_io: list[float] = field(default_factory=list)  # consumer CPU spread per I/O
    lost: int = 0  # records missing or dropped against the device's counts, or tracefs lost
    events: int = 0
    misses: int = 0  # program calls the kernel skipped (the program already running on that CPU)
    backups: int = 0  # events recorded by a backup program because its primary was skipped
    consumer_cpu_s: float = 0.0


def _load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def _check(mode: str, r: Probed) -> int:
    """Events missing against the device's completed I/Os (0 when the capture is whole)."""
    rep = r.report
    if mode.endswith("-nop"):
        return 0  # nothing recorded to check
    if mode.endswith("-count"):
        got = (rep["issue_counted"], rep["complete_counted"])
    else:
        got = (rep["issue_records"], rep["complete_records"])
    missing = sum(abs(g - r.device_ios) for g in got) + rep["dropped"] + rep["bad_records"]
    if missing:
        misses = {k: v["recursion_misses"] for k, v in rep["progs"].items() if v["recursion_misses"]}
        print(f"  {mode}: device completed {r.device_ios} I/Os, probe recorded {got}, its programs passed "
              f"{(rep['issue_counted'], rep['complete_counted'])}, dropped {rep['dropped']}, bad "
              f"{rep['bad_records']}, backups recorded {(rep.get('backup_issue'), rep.get('backup_complete'))}, "
              f"calls skipped {misses}")
    return missing


def measure(probe: Path, dev: str, dev_t: int) -> tuple[dict[str, Series], list[float]]:
    out = {m: Series() for m in METHODS}
    loads: list[float] = []
    fio_run(dev)  # warm-up: allocate the image's pages
    for i in range(ROUNDS):
        loads.append(_load())
        for m in METHODS:
            s = out[m]
            if m == "none":
                s.runs.append(fio_run(dev))
                s.extra_ns_per_io.append(0.0)
            elif m == "floor":
                one, lost = _floor_run(dev_t, lambda: fio_run(dev))
                s.runs.append(one)
                s.extra_ns_per_io.append(0.0)
                s.lost += lost
            else:
                r = probed_run(probe, m, dev)
                s.runs.append(r.run)
                s.lost += _check(m, r)
                s.misses += sum(int(p["recursion_misses"]) for p in r.report["progs"].values())
                s.backups += int(r.report.get("backup_issue", 0)) + int(r.report.get("backup_complete", 0))
                s.events += 0 if m.endswith("-nop") else 2 * r.device_ios
                cpu = float(r.report["consumer_cpu_s"])
                s.consumer_cpu_s += cpu
                s.extra_ns_per_io.append(cpu * 1e9 / max(1, r.run.iops * RUNTIME_S))
        print(f"round {i + 1}/{ROUNDS} (load {loads[-1]:.2f}): "
              + ", ".join(f"{m} {out[m].runs[-1].iops:,.0f}" for m in METHODS), flush=True)
    loads.append(_load())
    return out, loads


def _summary(v: list[float]) -> str:
    return f"median {statistics.median(v):.3f} (range {min(v):.3f}-{max(v):.3f}, n={len(v)})"


def report(r: dict[str, Series], loads: list[float]) -> None:
    base = r["none"]
    print(f"tmpfs loop, 4 KiB randwrite io_uring qd32, {RUNTIME_S} s runs, {ROUNDS} alternated rounds; "
          f"1-min load average {min(loads):.2f}-{max(loads):.2f} (median {statistics.median(loads):.2f}) on "
          f"{os.cpu_count()} CPUs")
    print(f"  none: median {statistics.median(x.iops for x in base.runs):,.0f} IOPS, "
          f"{statistics.median(x.cpu_ns_per_io for x in base.runs):,.0f} ns CPU per I/O (fio + loop workers)")
    for m, s in r.items():
        if m == "none":
            continue
        iops = [t.iops / b.iops for t, b in zip(s.runs, base.runs)]
        cpu = [b.cpu_ns_per_io / (t.cpu_ns_per_io + e) for t, b, e in zip(s.runs, base.runs, s.extra_ns_per_io)]
        extra = (f"; consumer {s.consumer_cpu_s * 1e9 / max(1, s.events):.1f} ns CPU per event; "
                 f"{s.misses} program calls skipped by the kernel, {s.backups} events recorded by a backup")
        extra = extra if s.events else ""
        print(f"  {m}: traced/untraced IOPS {_summary(iops)}; untraced/traced CPU per I/O {_summary(cpu)}; "
              f"{s.lost} events lost or miscounted{extra}")
        print("    per-round IOPS ratios: " + ", ".join(f"{x:.3f}" for x in iops))


def program_costs(probe: Path, dev: str) -> None:
    """One run per BPF mode with kernel.bpf_stats_enabled: the programs' own time per event
    (the statistic adds two clock reads a run, so it is kept out of the measured rounds)."""
    knob = Path("/proc/sys/kernel/bpf_stats_enabled")
    before = knob.read_text().strip()
    knob.write_text("1")
    try:
        for m in METHODS:
            if m in BPF_METHODS:
                r = probed_run(probe, m, dev)
                per = ", ".join(f"{name} {p['run_time_ns'] / max(1, p['run_cnt']):.0f} ns x {p['run_cnt']:,}"
                                for name, p in r.report["progs"].items())
                print(f"  {m} program time per call (bpf_stats): {per}")
    finally:
        knob.write_text(before)


def main() -> None:
    if os.geteuid() != 0:
        print("bench_bpf: needs root (loop devices, tracefs, BPF): skipped")
        return
    from fslab.devices import handle_for

    with tempfile.TemporaryDirectory(prefix="fslab-bpf-") as tmp:
        probe = Path(os.environ["FSLAB_BPF_PROBE"]) if os.environ.get("FSLAB_BPF_PROBE") else build(Path(tmp) / "build")
        with _tmpfs(Path(tmp) / "t") as t, _loop_on(t / "img") as dev:
            r, loads = measure(probe, dev, handle_for(dev).dev_t)
            report(r, loads)
            program_costs(probe, dev)


if __name__ == "__main__":
    main()
